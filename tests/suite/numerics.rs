//! Wrong answers an independent comparison with NumPy found (issue 15), one test per
//! class, with NumPy's values as literals (computed with NumPy 2.4, float32 unless
//! noted), on every device.

use crate::common;

use common::{devices, on};
use lazuli::{Array, DType};

/// int64 to float32 rounds once (it went through f64 and rounded twice), and so do the
/// ops that promote int64 to float.
#[test]
fn int64_to_float_rounds_once() {
    // 2^60 + 2^36 + 1 is just above the tie between 2^60 and 2^60 + 2^37.
    let big = (1i64 << 60) + (1 << 36) + 1;
    let want = ((1u64 << 60) + (1 << 37)) as f32;
    let x = Array::from_slice(&[big, -big, (1 << 53) + 1, i64::MAX, i64::MIN], &[5]).unwrap();
    let got = x.astype(DType::F32).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(got, vec![want, -want, 9007199254740992.0, 9.223372e18, -9.223372e18]);
    // bf16 and f16: one rounding from the integer too.
    let b = Array::from_slice(&[(1i64 << 30) + (1 << 22) + 1], &[1]).unwrap();
    let got = b.astype(DType::BF16).unwrap().astype(DType::F64).unwrap().to_vec::<f64>().unwrap();
    assert_eq!(got, vec![((1u64 << 30) + (1 << 23)) as f64]);
    // Ops that promote int64 inputs see the correctly rounded value.
    let one = Array::from_slice(&[big], &[1]).unwrap();
    assert_eq!(one.reciprocal().unwrap().to_vec::<f32>().unwrap(), vec![1.0 / want]);
    assert_eq!(one.div(1.0).unwrap().to_vec::<f32>().unwrap(), vec![want]);
    let f = Array::from_slice(&[0.5f32], &[1]).unwrap();
    let w = lazuli::where_(&Array::from_slice(&[true], &[1]).unwrap(), &one, &f).unwrap();
    assert_eq!(w.to_vec::<f32>().unwrap(), vec![want]);
    let s = lazuli::stack(&[&one.astype(DType::F32).unwrap(), &f], 0).unwrap();
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![want, 0.5]);
}

/// f32 to bf16/f16 rounds to nearest even from every bit of the f32.
#[test]
fn narrowing_float_casts_round_once() {
    // Just above ties, the deciding bit in the last three bits of the f32 mantissa.
    let x = 1.0f32 + 2f32.powi(-8) + 2f32.powi(-23);
    let y = 1.0f32 + 2f32.powi(-11) + 2f32.powi(-23);
    let a = Array::from_slice(&[x, y, 1.0 + 2f32.powi(-8)], &[3]).unwrap();
    let b = a.astype(DType::BF16).unwrap().astype(DType::F32).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(b[0], 1.0 + 2f32.powi(-7));
    assert_eq!(b[2], 1.0, "an exact tie goes to even");
    for dev in devices() {
        let h = on(dev, || a.astype(DType::F16)?.astype(DType::F32)).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(h[1], 1.0 + 2f32.powi(-10), "{dev}");
    }
}

/// Float floor_divide and remainder follow NumPy's divmod.
#[test]
fn float_floor_divide_and_remainder_match_numpy() {
    let inf = f32::INFINITY;
    let a = Array::from_slice(&[1.0f32, -7.0, -1.0, 5.0, inf, -4.0, 7.5, -0.0, 3.0], &[9]).unwrap();
    let b = Array::from_slice(&[0.1f32, 0.7, inf, -inf, 2.0, 2.0, -2.0, 5.0, 0.0], &[9]).unwrap();
    let fd = [9.0f32, -11.0, -1.0, -1.0, f32::NAN, -2.0, -4.0, -0.0, inf];
    let rem = [0.099_999_99f32, 0.699_999_87, inf, -inf, f32::NAN, 0.0, -0.5, 0.0, f32::NAN];
    for dev in devices() {
        let q = on(dev, || a.floor_divide(&b)).unwrap().to_vec::<f32>().unwrap();
        let r = on(dev, || a.remainder(&b)).unwrap().to_vec::<f32>().unwrap();
        common::assert_close(&format!("{dev} floor_divide"), &q, &fd, 0.0, 0.0);
        common::assert_close(&format!("{dev} remainder"), &r, &rem, 1e-6, 0.0);
        // Signs of zeros: -0 // 5 is -0; -4 % 2 is +0.
        assert!(q[7].is_sign_negative(), "{dev}: -0 // 5");
        assert!(r[5].is_sign_positive(), "{dev}: -4 % 2");
    }
    let a64 = Array::from_slice(&[1.0f64, -7.0], &[2]).unwrap();
    let b64 = Array::from_slice(&[0.1f64, 0.7], &[2]).unwrap();
    // NumPy float64 gives the same: [9., -11.].
    assert_eq!(a64.floor_divide(&b64).unwrap().to_vec::<f64>().unwrap(), vec![9.0, -11.0]);
}

/// Integer scatter_add wraps (it saturated, and int64 lost precision through f64).
#[test]
fn integer_scatter_add_wraps() {
    for dev in devices() {
        let dst = Array::from_slice(&[i32::MAX, 5, i32::MIN], &[3]).unwrap();
        let idx = Array::from_slice(&[0i32, 2, 2], &[3]).unwrap();
        let upd = Array::from_slice(&[1i32, -1, -1], &[3]).unwrap();
        let got = on(dev, || dst.scatter_add(&idx, &upd, 0)).unwrap().to_vec::<i32>().unwrap();
        assert_eq!(got, vec![i32::MIN, 5, i32::MAX - 1], "{dev}");
        let dst = Array::from_slice(&[u32::MAX, 0], &[2]).unwrap();
        let upd = Array::from_slice(&[2u32, 3], &[2]).unwrap();
        let idx = Array::from_slice(&[0i32, 1], &[2]).unwrap();
        let got = on(dev, || dst.scatter_add(&idx, &upd, 0)).unwrap().to_vec::<u32>().unwrap();
        assert_eq!(got, vec![1, 3], "{dev}");
    }
    let dst = Array::from_slice(&[(1i64 << 53) + 1, i64::MAX], &[2]).unwrap();
    let idx = Array::from_slice(&[0i32, 1], &[2]).unwrap();
    let upd = Array::from_slice(&[2i64, 1], &[2]).unwrap();
    let got = dst.scatter_add(&idx, &upd, 0).unwrap().to_vec::<i64>().unwrap();
    assert_eq!(got, vec![(1 << 53) + 3, i64::MIN]);
}

/// int64 indices beyond int32's range clamp (take) like any out-of-range index.
#[test]
fn int64_indices_beyond_int32_clamp() {
    let x = Array::from_slice(&[0i32, 10, 20, 30, 40], &[5]).unwrap();
    let idx = Array::from_slice(&[(1i64 << 32) + 1, -(1i64 << 32), 2, -1], &[4]).unwrap();
    assert_eq!(x.take(&idx, None).unwrap().to_vec::<i32>().unwrap(), vec![40, 0, 20, 40]);
    let along = Array::from_slice(&[(1i64 << 40), 1], &[2]).unwrap();
    assert_eq!(x.take_along_axis(&along, 0).unwrap().to_vec::<i32>().unwrap(), vec![40, 10]);
    // Scatter drops them.
    let upd = Array::from_slice(&[7i32, 8], &[2]).unwrap();
    let got = x.scatter(&Array::from_slice(&[(1i64 << 32) + 1, 0], &[2]).unwrap(), &upd, 0).unwrap();
    assert_eq!(got.to_vec::<i32>().unwrap(), vec![8, 10, 20, 30, 40]);
}

/// Half-precision means and variances accumulate in f32 (a 16-bit sum overflows).
#[test]
fn half_mean_and_var_do_not_overflow() {
    let v: Vec<f32> = common::values(500 * 90, 7, 94.0, 96.0);
    let want = v.iter().map(|&x| half::f16::from_f32(x).to_f64()).sum::<f64>() / v.len() as f64;
    let a = Array::from_slice(&v, &[500, 90]).unwrap().astype(DType::F16).unwrap();
    for dev in devices() {
        let m = on(dev, || a.mean(&[], false)?.astype(DType::F32)).unwrap().item::<f32>().unwrap();
        assert!((m as f64 - want).abs() < 0.05, "{dev}: mean {m}, want {want}");
        let cols = on(dev, || a.mean(&[0], false)?.astype(DType::F32)).unwrap().to_vec::<f32>().unwrap();
        assert!(cols.iter().all(|c| (94.0..96.0).contains(c)), "{dev}: {:?}", &cols[..4]);
        let var = on(dev, || a.var(&[], false, 0)?.astype(DType::F32)).unwrap().item::<f32>().unwrap();
        // Uniform on [94, 96): variance 1/3.
        assert!((var - 1.0 / 3.0).abs() < 0.02, "{dev}: var {var}");
    }
}

/// Half-precision softmax, logsumexp and log_softmax sum their exponentials in f32: over
/// 100k equal logits a 16-bit sum overflowed (softmax 0, logsumexp inf).
#[test]
fn half_softmax_over_long_rows_does_not_overflow() {
    let n = 100_000;
    let z = lazuli::zeros(&[2, n], DType::F32).unwrap();
    let (p, lse) = (1.0 / n as f64, (n as f64).ln());
    for dt in [DType::F16, DType::BF16] {
        let x = z.astype(dt).unwrap();
        for dev in devices() {
            // The GPU has no bf16.
            if dt == DType::BF16 && dev != lazuli::Device::cpu() {
                continue;
            }
            let read = |a: lazuli::Result<Array>| a.unwrap().astype(DType::F32).unwrap().to_vec::<f32>().unwrap();
            // One rounding: 1e-5 is subnormal in f16 (spacing 6e-8), 11.5 in bf16 has 0.0625.
            let tol = 4e-3;
            let sm = read(on(dev, || x.softmax(&[1])));
            assert_eq!(on(dev, || x.softmax(&[1])).unwrap().dtype(), dt);
            assert!(sm.iter().all(|&v| ((v as f64 - p) / p).abs() < tol), "{dev} {dt}: softmax {}", sm[0]);
            for (what, got, want) in [
                ("logsumexp", read(on(dev, || x.logsumexp(&[1], false))), lse),
                ("log_softmax", read(on(dev, || x.log_softmax(&[1]))), -lse),
            ] {
                assert!(got.iter().all(|&v| ((v as f64 - want) / want).abs() < tol), "{dev} {dt}: {what} {}", got[0]);
            }
        }
    }
}

/// A running product after a 0 stays 0 on every device, also where the product of the
/// later elements alone overflows: the GPU's parallel row scan gave 0 * inf = NaN there.
#[test]
fn cumprod_after_a_zero_stays_zero() {
    for n in [64usize, 256, 1025, 4097] {
        let mut v = vec![1e20f32; n];
        v[0] = 0.0;
        let x = Array::from_slice(&v, &[1, n]).unwrap();
        for dev in devices() {
            for reverse in [false, true] {
                let y = on(dev, || if reverse { x.flip(&[1])?.cumprod(1, true) } else { x.cumprod(1, false) }).unwrap();
                let got = y.to_vec::<f32>().unwrap();
                let pos = if reverse { 0 } else { n - 1 };
                assert!(got.iter().all(|&g| g == 0.0), "{dev} n={n} reverse={reverse}: {}", got[pos]);
            }
        }
    }
}

/// Integer means over strided views are exact sums divided once: large values that
/// cancel gave -8/7 on the CPU and -6/7 on the GPU.
#[test]
fn integer_mean_of_a_transposed_view_is_exact() {
    // Columns of 7 values near ±2^31 that cancel to small sums.
    let mut v = vec![0i32; 7 * 129];
    for c in 0..129 {
        let big = [2_147_483_000 - c as i32 * 7919, -2_147_483_100 + c as i32 * 13];
        let col = [big[0], big[1], big[0] - 3, big[1] + 1, 1_000_000_007, -1_000_000_000 - c as i32, 5];
        for (r, x) in col.iter().enumerate() {
            v[r * 129 + c] = *x;
        }
    }
    let want: Vec<f32> =
        (0..129).map(|c| ((0..7).map(|r| v[r * 129 + c] as i64).sum::<i64>() as f64 / 7.0) as f32).collect();
    let a = Array::from_slice(&v, &[7, 129]).unwrap();
    for dev in devices() {
        let m = on(dev, || a.transpose(&[1, 0])?.mean(&[-1], true)).unwrap();
        assert_eq!(m.shape(), &[129, 1]);
        let got = m.to_vec::<f32>().unwrap();
        common::assert_close(&format!("{dev} int32 mean"), &got, &want, 2e-7, 0.0);
        // u32 and bool take the same path.
        let u = Array::from_slice(&[u32::MAX, u32::MAX - 2, 1], &[3]).unwrap();
        let mu = on(dev, || u.mean(&[], false)).unwrap().item::<f32>().unwrap();
        assert_eq!(mu, ((2.0 * u32::MAX as f64 - 1.0) / 3.0) as f32, "{dev}");
        let b = Array::from_slice(&[true, false, true, true], &[4]).unwrap();
        assert_eq!(on(dev, || b.mean(&[], false)).unwrap().item::<f32>().unwrap(), 0.75, "{dev}");
    }
}

/// Integer means whose halves' sums pass 2^24 and then cancel: the low half was rounded
/// on its own and its error outlived the cancellation (a mean of 0 for 1/1201).
#[test]
fn integer_mean_keeps_small_results_of_large_cancelling_sums() {
    let mut v = vec![65535i32; 600];
    v.extend(vec![-65535i32; 600]);
    v.push(1);
    // Rows of 2000 values near ±2^31 that cancel to a small sum per row, read by columns too.
    let rows: Vec<i64> = (0..6i64)
        .flat_map(|r| {
            (0..2000i64).map(move |c| if c % 2 == 0 { 2_147_480_000 - c * 3 - r } else { -2_147_480_000 + (c - 1) * 3 })
        })
        .collect();
    let want_rows: Vec<f32> = rows.chunks(2000).map(|w| (w.iter().sum::<i64>() as f64 / 2000.0) as f32).collect();
    let a = Array::from_slice(&v, &[v.len()]).unwrap();
    let m = Array::from_slice(&rows.iter().map(|&x| x as i32).collect::<Vec<_>>(), &[6, 2000]).unwrap();
    let m64 = Array::from_slice(&rows, &[6, 2000]).unwrap();
    for dev in devices() {
        let got = on(dev, || a.mean(&[], false)).unwrap().item::<f32>().unwrap();
        assert_eq!(got, (1.0f64 / 1201.0) as f32, "{dev}");
        for (name, x) in [("i32", &m), ("i64", &m64)] {
            // The GPU has no i64.
            if name == "i64" && dev != lazuli::Device::cpu() {
                continue;
            }
            let got = on(dev, || x.mean(&[1], false)).unwrap().to_vec::<f32>().unwrap();
            common::assert_close(&format!("{dev} {name} row means"), &got, &want_rows, 2e-7, 0.0);
            let got = on(dev, || x.transpose(&[1, 0])?.mean(&[0], false)).unwrap().to_vec::<f32>().unwrap();
            common::assert_close(&format!("{dev} {name} transposed"), &got, &want_rows, 2e-7, 0.0);
        }
    }
}

/// Scans of a 0-d array give one element (NumPy); triu/tril of a 1-D array give the
/// `n x n` triangle of that row (NumPy).
#[test]
fn scans_of_scalars_and_triangles_of_vectors() {
    let s = Array::scalar(3.5f32).unwrap();
    let r = Array::from_slice(&[1i32, 2, 3], &[3]).unwrap();
    for dev in devices() {
        for f in [Array::cumsum, Array::cumprod, Array::cummax, Array::cummin] {
            let c = on(dev, || f(&s, 0, false)).unwrap();
            assert_eq!(c.shape(), &[1]);
            assert_eq!(c.to_vec::<f32>().unwrap(), vec![3.5], "{dev}");
        }
        assert!(on(dev, || s.cumsum(1, false)).is_err(), "{dev}: axis 1 of a 0-d array");
        let u = on(dev, || r.triu(0)).unwrap();
        assert_eq!(u.shape(), &[3, 3]);
        assert_eq!(u.to_vec::<i32>().unwrap(), vec![1, 2, 3, 0, 2, 3, 0, 0, 3], "{dev}");
        let l = on(dev, || r.tril(-1)).unwrap();
        assert_eq!(l.to_vec::<i32>().unwrap(), vec![0, 0, 0, 1, 0, 0, 1, 2, 0], "{dev}");
        assert!(on(dev, || s.triu(0)).is_err());
    }
}

/// Unary ops at -0 and +0 give NumPy's zeros, signs included (the GPU's expm1 and erf
/// gave +0 at -0: their series summed `-0 + +0`), alone and inside a fused chain.
#[test]
fn unary_ops_keep_the_sign_of_zero() {
    type Op = fn(&Array) -> lazuli::Result<Array>;
    let (z, inf) = (-0.0f32, f32::INFINITY);
    // NumPy 2.4: np.negative(...), np.sign, np.floor, np.expm1, ... of [-0.0, 0.0];
    // erf as math.erf, rsqrt as torch.rsqrt, erfinv as scipy.special.erfinv.
    let cases: [(&str, Op, [f32; 2]); 20] = [
        ("neg", Array::neg, [0.0, z]),
        ("abs", Array::abs, [0.0, 0.0]),
        ("sign", Array::sign, [0.0, 0.0]),
        ("square", Array::square, [0.0, 0.0]),
        ("floor", Array::floor, [z, 0.0]),
        ("ceil", Array::ceil, [z, 0.0]),
        ("round", Array::round, [z, 0.0]),
        ("exp", Array::exp, [1.0, 1.0]),
        ("expm1", Array::expm1, [z, 0.0]),
        ("log", Array::log, [-inf, -inf]),
        ("log1p", Array::log1p, [z, 0.0]),
        ("log2", Array::log2, [-inf, -inf]),
        ("sqrt", Array::sqrt, [z, 0.0]),
        ("rsqrt", Array::rsqrt, [-inf, inf]),
        ("reciprocal", Array::reciprocal, [-inf, inf]),
        ("sin", Array::sin, [z, 0.0]),
        ("tan", Array::tan, [z, 0.0]),
        ("tanh", Array::tanh, [z, 0.0]),
        ("erf", Array::erf, [z, 0.0]),
        ("erfinv", Array::erfinv, [z, 0.0]),
    ];
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let mut wrong = Vec::new();
    for dev in devices() {
        for (name, op, want) in cases {
            on(dev, || {
                let x = Array::from_slice(&[z, 0.0], &[2])?;
                let alone = op(&x)?.to_vec::<f32>()?;
                // `* 1` keeps the zero's sign and makes a chain the planner fuses.
                let fused = op(&x.mul(1.0)?)?.mul(1.0)?.to_vec::<f32>()?;
                for (how, got) in [("alone", alone), ("fused", fused)] {
                    if bits(&got) != bits(&want) {
                        wrong.push(format!("{name} {how} on {dev}: {got:?}, want {want:?}"));
                    }
                }
                Ok(())
            })
            .unwrap();
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
