//! GPU numerics at the edges (issue 15): values the WGSL kernels must get right on every
//! driver, checked against exact expected values (f64 references of the same f32 inputs,
//! Rust's C99 `powf`, or literal NumPy float32/float16 results).
//!
//! lavapipe keeps denormals and divides exactly, so some of these only failed on other
//! drivers (NVIDIA computes `x / y` as `x * (1 / y)`, flushes, and reduces sin/cos badly);
//! the kernels now avoid what those drivers get wrong.

use crate::common;

use common::{assert_close, gpu_available, on, worst_ulps};
use half::f16;
use lazuli::{Array, Device, Element, Result};

/// Runs `f` on the GPU and reads its result back.
fn gpu<T: Element>(f: impl FnOnce() -> Result<Array>) -> Vec<T> {
    on(Device::gpu(0), || f()?.to_vec::<T>()).expect("gpu run")
}

fn arr(v: &[f32]) -> Array {
    Array::from_slice(v, &[v.len()]).expect("array")
}

fn arr16(v: &[f32]) -> Array {
    let h: Vec<f16> = v.iter().map(|&x| f16::from_f32(x)).collect();
    Array::from_slice(&h, &[h.len()]).expect("array")
}

/// Bit-exact for specials (NaN, infinities, zeros with their sign), else within `rel`.
fn assert_specials(what: &str, got: &[f32], want: &[f32], rel: f32) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = if w.is_nan() {
            g.is_nan()
        } else if w == 0.0 || w.is_infinite() {
            g.to_bits() == w.to_bits()
        } else {
            (g - w).abs() <= rel * w.abs()
        };
        assert!(ok, "{what}: element {i}: got {g:e} ({:#x}), want {w:e} ({:#x})", g.to_bits(), w.to_bits());
    }
}

#[test]
fn expm1_and_log1p_do_not_overflow_for_large_arguments() {
    if !gpu_available() {
        return;
    }
    let x = [88.5f32, 88.7, 50.0, 10.0, 1.0, 0.6, 1e-3, -1e-3, -0.6, -20.0, -100.0, 1e-30, -1e-30, 0.0];
    let want: Vec<f32> = x.iter().map(|&v| (v as f64).exp_m1() as f32).collect();
    let got: Vec<f32> = gpu(|| arr(&x).expm1());
    // exp of a large argument carries the rounding of x * log2(e): rel 1e-4 (TRANS).
    assert_close("expm1", &got, &want, 1e-4, 0.0);
    assert!(got[0].is_finite() && got[1].is_finite(), "expm1(88.5), expm1(88.7) must be finite: {got:?}");

    let x = [3e38f32, f32::MAX, 1e30, 1e10, 100.0, 1.0, 1e-3, -1e-3, -0.5, 1e-30, -1e-30];
    let want: Vec<f32> = x.iter().map(|&v| (v as f64).ln_1p() as f32).collect();
    let got: Vec<f32> = gpu(|| arr(&x).log1p());
    assert_close("log1p", &got, &want, 1e-5, 0.0);
    assert_subnormal_or_zero("log1p", gpu(|| arr(&[1e-40]).log1p())[0], 1e-40);
    assert!((got[0] - 88.59685).abs() < 1e-3, "log1p(3e38) = {}", got[0]);
}

/// A subnormal result: drivers may flush it (NVIDIA does), else it must be close.
fn assert_subnormal_or_zero(what: &str, got: f32, want: f32) {
    assert!(got == 0.0 || ((got - want) / want).abs() < 1e-5, "{what}: got {got:e}, want {want:e} or 0");
}

#[test]
fn pow_follows_the_c99_special_cases() {
    if !gpu_available() {
        return;
    }
    let inf = f32::INFINITY;
    let nan = f32::NAN;
    let bases = [1.0f32, -1.0, 0.5, -0.5, 2.0, -2.0, 0.0, -0.0, inf, -inf, nan, 3.0];
    let exps = [inf, -inf, nan, 0.0, -0.0, 3.0, -3.0, 2.0, 0.5, -0.5, 1099511627776.0, -1099511627776.0, 16777215.0];
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for &b in &bases {
        for &e in &exps {
            xs.push(b);
            ys.push(e);
        }
    }
    let want: Vec<f32> = xs.iter().zip(&ys).map(|(&b, &e)| b.powf(e)).collect();
    let got: Vec<f32> = gpu(|| arr(&xs).pow(arr(&ys)));
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        let ok = if w.is_nan() {
            g.is_nan()
        } else if w == 0.0 || w.is_infinite() || w.abs() == 1.0 {
            g.to_bits() == w.to_bits()
        } else {
            (g - w).abs() <= 1e-5 * w.abs()
        };
        assert!(ok, "pow({}, {}): got {g}, want {w}", xs[i], ys[i]);
    }

    // 2^40 becomes +inf in f16, so this is pow(x, +inf) in f16.
    let b16 = [1.0f32, 0.5, -0.5, -2.0, 2.0, 0.0, -0.0, inf, -inf, nan, -1.0];
    let got: Vec<f16> = gpu(|| arr16(&b16).pow(1099511627776.0));
    let got: Vec<f32> = got.iter().map(|h| h.to_f32()).collect();
    let want: Vec<f32> = b16.iter().map(|&b| f16::from_f32(b.powf(inf)).to_f32()).collect();
    assert_specials("f16 pow(x, 2^40)", &got, &want, 0.0);
    // The CPU agrees.
    let cpu: Vec<f16> = on(Device::cpu(), || arr16(&b16).pow(1099511627776.0)?.to_vec()).unwrap();
    let cpu: Vec<f32> = cpu.iter().map(|h| h.to_f32()).collect();
    assert_specials("cpu f16 pow(x, 2^40)", &cpu, &want, 0.0);
}

/// A base near 1 to a large power: the logarithm must be relatively accurate there, as
/// the exponent multiplies its error (a proptest found pow(0.99999899, 8388609) 10% low).
/// Within 256 ulps of the f64 reference of the same f32 inputs (rounding `y * log2(x)` to
/// f32 alone costs up to about 50 here, and WGSL's `exp2` may add a few hundred; the old
/// error was about 10%).
#[test]
fn pow_near_one_with_large_exponents() {
    if !gpu_available() {
        return;
    }
    let pairs: [(f32, f32); 9] = [
        (0.999_999, 8_388_609.0),
        (-0.999_999, 8_388_609.0),
        (1.000_001_2, 5.0e6),
        (0.999_5, -150_000.0),
        (1.25, 300.0),
        (0.75, -250.0),
        (1.999_99, 100.0),
        (0.500_01, -120.0),
        (1.5, 2.0),
    ];
    let (xs, ys): (Vec<f32>, Vec<f32>) = pairs.iter().copied().unzip();
    let got = gpu::<f32>(|| arr(&xs).pow(arr(&ys)));
    // Also as a broadcast (a lone op reading a broadcast input runs as a fused region).
    let n = pairs.len();
    let outer = gpu::<f32>(|| arr(&xs).reshape(&[n as isize, 1])?.pow(arr(&ys).reshape(&[1, n as isize])?));
    let diagonal: Vec<f32> = (0..n).map(|i| outer[i * n + i]).collect();
    for (form, got) in [("flat", got), ("broadcast", diagonal)] {
        for ((&x, &y), g) in xs.iter().zip(&ys).zip(got) {
            let want = (x as f64).powf(y as f64) as f32;
            let ulp = (want.abs().max(f32::MIN_POSITIVE) * f32::EPSILON) as f64;
            assert!(((g - want) as f64).abs() <= 256.0 * ulp, "{form}: pow({x}, {y}) = {g:e}, want {want:e}");
        }
    }
}

#[test]
fn half_reductions_accumulate_in_f32() {
    if !gpu_available() {
        return;
    }
    let v = f16::from_f32(0.48);
    let want = 20000.0 * v.to_f64();
    let x16 = vec![v; 20000];
    let check = |what: &str, got: Vec<f16>, want: f64, n: usize| {
        let got: Vec<f64> = got.iter().map(|h| h.to_f64()).collect();
        assert_close(what, &got, &vec![want; n], 1e-3, 0.0);
    };
    check("1-d f16 sum", gpu(|| Array::from_slice(&x16, &[20000])?.sum(&[], false)), want, 1);
    check("1-d f16 mean", gpu(|| Array::from_slice(&x16, &[20000])?.mean(&[], false)), v.to_f64(), 1);
    let x2 = vec![v; 3 * 20000];
    check("f16 [3, 20000] sum axis 1", gpu(|| Array::from_slice(&x2, &[3, 20000])?.sum(&[1], false)), want, 3);
    check("f16 [20000, 3] sum axis 0", gpu(|| Array::from_slice(&x2, &[20000, 3])?.sum(&[0], false)), want, 3);
    check(
        "f16 [3, 20000] sum axis 0",
        gpu(|| Array::from_slice(&x2, &[3, 20000])?.sum(&[0], false)),
        3.0 * v.to_f64(),
        20000,
    );
    check(
        "f16 [20000, 3] sum axis 1",
        gpu(|| Array::from_slice(&x2, &[20000, 3])?.sum(&[1], false)),
        3.0 * v.to_f64(),
        20000,
    );

    // Partial products of 2^30 and 2^-30 leave f16's range; the product is 1.
    let mut p = vec![f16::ONE; 20000];
    for i in 0..30 {
        p[i * 100] = f16::from_f32(2.0);
        p[19000 + i * 10] = f16::from_f32(0.5);
    }
    check("1-d f16 prod", gpu(|| Array::from_slice(&p, &[20000])?.prod(&[], false)), 1.0, 1);

    // Two separate runs of axes ([0, 2]): the intermediate sums (±100000) leave f16's
    // range, the result (3750) does not.
    let mut y = Vec::with_capacity(4 * 3 * 5000);
    for s in [20.0f32, -20.0, 0.5, 0.25] {
        y.extend(std::iter::repeat_n(f16::from_f32(s), 3 * 5000));
    }
    check(
        "f16 [4, 3, 5000] sum axes [0, 2]",
        gpu(|| Array::from_slice(&y, &[4, 3, 5000])?.sum(&[0, 2], false)),
        3750.0,
        3,
    );
}

#[test]
fn division_is_right_at_the_extremes() {
    if !gpu_available() {
        return;
    }
    let inf = f32::INFINITY;
    let a = [inf, 1e38, 3e38, 6.0, -inf, 0.0, 5.0, -5.0, -7.5, 1e30, 3e38, 1.0, 1e-3];
    let b = [3e38f32, 3e38, 3e38, 3.0, -3e38, 3e38, 0.0, 0.0, 2.5, -1e-8, 1e-3, 3e38, f32::MAX];
    let want: Vec<f32> = a.iter().zip(&b).map(|(&x, &y)| ((x as f64) / (y as f64)) as f32).collect();
    let got: Vec<f32> = gpu(|| arr(&a).div(arr(&b)));
    let n = a.len() - 2;
    assert_specials("div", &got[..n], &want[..n], 1e-6);
    // Subnormal quotients: the subnormal, or 0 where the driver flushes.
    for i in n..a.len() {
        let ok = got[i] == 0.0 || (got[i] - want[i]).abs() <= 1e-6 * want[i].abs() + 1e-44;
        assert!(ok, "{} / {}: got {:e}, want {:e} or 0", a[i], b[i], got[i], want[i]);
    }
    // The same care in remainder and floor_divide (huge divisors).
    let a = [1e38f32, -1e38, 3e38, 1.0, -inf];
    let b = [3e38f32, 3e38, 3e38, -3e38, 3e38];
    let fd: Vec<f32> = gpu(|| arr(&a).floor_divide(arr(&b)));
    let rem: Vec<f32> = gpu(|| arr(&a).remainder(arr(&b)));
    // NumPy float32.
    assert_specials("floor_divide huge", &fd, &[0.0, -1.0, 1.0, -1.0, f32::NAN], 0.0);
    assert_specials("remainder huge", &rem, &[1e38, 2.0000001e38, 0.0, -3e38, f32::NAN], 0.0);
    // Tiny divisors whose fmod is subnormal while the remainder is not (NVIDIA, which
    // flushes subnormals, gave -0 for the first before the kernel scaled them).
    let a = [13.602262f32, -5.5];
    let b = [-4.0110308e-38f32, 2e-38];
    let rem: Vec<f32> = gpu(|| arr(&a).remainder(arr(&b)));
    // NumPy float32.
    assert_specials("remainder tiny", &rem, &[-3.8577097e-38, 1.2497161e-38], 0.0);
}

#[test]
fn floor_divide_and_remainder_match_numpy() {
    if !gpu_available() {
        return;
    }
    let inf = f32::INFINITY;
    let nan = f32::NAN;
    let a = [1.0f32, -7.0, -1.0, 5.0, inf, 7.0, -7.0, 7.0, -7.0, 3e38, 0.0, -0.0, 5.0, 1e30, -3.5, 6.0, 1e38, inf];
    let b = [0.1f32, 0.7, inf, -inf, 2.0, 3.0, 3.0, -3.0, -3.0, 1e-3, 3.0, 3.0, 0.0, 7.0, 0.5, -2.0, 3e38, 3e38];
    // python3: a // b, np.remainder(a, b) on float32 arrays.
    let fd =
        [9.0, -11.0, -1.0, -1.0, nan, 2.0, -3.0, -3.0, 2.0, inf, 0.0, -0.0, inf, 1.4285715e29, -7.0, -3.0, 0.0, nan];
    let rem = [
        9.999999e-2,
        6.9999987e-01,
        inf,
        -inf,
        nan,
        1.0,
        2.0,
        -2.0,
        -1.0,
        6.6202006e-04,
        0.0,
        0.0,
        nan,
        1.0,
        0.0,
        -0.0,
        1e38,
        nan,
    ];
    let got: Vec<f32> = gpu(|| arr(&a).floor_divide(arr(&b)));
    assert_specials("floor_divide", &got, &fd, 1e-7);
    let got: Vec<f32> = gpu(|| arr(&a).remainder(arr(&b)));
    assert_specials("remainder", &got, &rem, 1e-7);

    // float16 (NumPy computes in float32 and rounds once, as the kernel does).
    let a = [1.0f32, -7.0, -1.0, 5.0, 7.0, -7.0, 3.5, -3.5];
    let b = [0.1f32, 0.7, inf, -inf, 3.0, 3.0, -2.0, 0.5];
    let fd = [10.0f32, -10.0, -1.0, -1.0, 2.0, -3.0, -2.0, -7.0];
    let rem = [2.441e-4f32, 1.953e-3, inf, -inf, 1.0, 2.0, -0.5, 0.0];
    let got: Vec<f16> = gpu(|| arr16(&a).floor_divide(arr16(&b)));
    let got: Vec<f32> = got.iter().map(|h| h.to_f32()).collect();
    assert_specials("f16 floor_divide", &got, &fd, 0.0);
    let got: Vec<f16> = gpu(|| arr16(&a).remainder(arr16(&b)));
    let got: Vec<f32> = got.iter().map(|h| h.to_f32()).collect();
    assert_specials("f16 remainder", &got, &rem, 1e-3);
}

#[test]
fn integer_scatter_add_wraps() {
    if !gpu_available() {
        return;
    }
    let got: Vec<i32> = gpu(|| {
        let base = Array::from_slice(&[i32::MAX, i32::MIN, 5, 0], &[4])?;
        let idx = Array::from_slice(&[0i32, 1, 2, 3, 3], &[5])?;
        let upd = Array::from_slice(&[1i32, -1, 3, i32::MAX, 2], &[5])?;
        base.scatter_add(&idx, &upd, 0)
    });
    assert_eq!(got, vec![i32::MIN, i32::MAX, 8, i32::MIN + 1], "i32 scatter_add");
    let got: Vec<u32> = gpu(|| {
        let base = Array::from_slice(&[u32::MAX, 7, 0], &[3])?;
        let idx = Array::from_slice(&[0i32, 1, 2, 2], &[4])?;
        let upd = Array::from_slice(&[2u32, 1, u32::MAX, 3], &[4])?;
        base.scatter_add(&idx, &upd, 0)
    });
    assert_eq!(got, vec![1, 8, 2], "u32 scatter_add");
}

/// tanh's two forms meet at 0.55: a sweep of magnitudes from 1e-8 to 40, both signs, with
/// the points next to the switch, within the same bound as the unfused op's other tests.
#[test]
fn tanh_over_its_range() {
    if !gpu_available() {
        return;
    }
    let mut x: Vec<f32> = (0..4000).map(|i| 1e-8f32 * 10f32.powf(i as f32 * 9.6 / 4000.0)).collect();
    let edge = 0.55f32;
    x.extend((-64..64).map(|k| f32::from_bits((edge.to_bits() as i32 + k) as u32)));
    let neg: Vec<f32> = x.iter().map(|v| -v).collect();
    x.extend(neg);
    let want: Vec<f32> = x.iter().map(|&v| (v as f64).tanh() as f32).collect();
    let got: Vec<f32> = gpu(|| arr(&x).tanh());
    assert_close("tanh", &got, &want, 2e-6, 0.0);
}

#[test]
fn small_and_subnormal_arguments() {
    if !gpu_available() {
        return;
    }
    let x = [1e-30f32, -1e-30, 1e-5, -1e-5, 0.3, -0.7, 1.0, 2.0, 10.0, 20.0, -20.0, 0.0];
    let want: Vec<f32> = x.iter().map(|&v| (v as f64).tanh() as f32).collect();
    let got: Vec<f32> = gpu(|| arr(&x).tanh());
    assert_close("tanh", &got, &want, 2e-6, 0.0);
    assert_subnormal_or_zero("tanh", gpu(|| arr(&[1e-40]).tanh())[0], 1e-40);
    let tiny = [1e-30f32, -1e-30, 1e-20];
    let got: Vec<f32> = gpu(|| arr(&tiny).expm1());
    assert_close("expm1 tiny", &got, &tiny, 1e-6, 0.0);
    let got: Vec<f32> = gpu(|| arr(&tiny).log1p());
    assert_close("log1p tiny", &got, &tiny, 1e-6, 0.0);

    // Subnormal inputs: right whether or not the driver flushes them.
    let x = [1e-40f32, f32::from_bits(1), 1.1754942e-38, 1e-30, 1.0, -1e-40, 0.0, -0.0];
    let want: Vec<f32> = x.iter().map(|&v| (v as f64).ln() as f32).collect();
    let got: Vec<f32> = gpu(|| arr(&x).log());
    assert_specials("log", &got, &want, 1e-5);
    assert!((got[0] + 92.103).abs() < 1e-3, "log(1e-40) = {}", got[0]);
    let want: Vec<f32> = x.iter().map(|&v| (v as f64).log2() as f32).collect();
    let got: Vec<f32> = gpu(|| arr(&x).log2());
    assert_specials("log2", &got, &want, 1e-5);
}

#[test]
fn sin_cos_reduce_large_arguments() {
    if !gpu_available() {
        return;
    }
    let x = [
        1e10f32,
        -1e10,
        2147483648.0,
        2147483648.0 + 256.0,
        3e38,
        -3e38,
        f32::MAX,
        1.6263772e38,
        123456.7,
        1e5,
        16777216.0,
        100.0,
        10.0,
        3.0,
        -2.5,
        0.7,
        1e-3,
        0.0,
    ];
    let got: Vec<f32> = gpu(|| arr(&x).sin());
    let want: Vec<f32> = x.iter().map(|&v| (v as f64).sin() as f32).collect();
    assert_close("sin", &got, &want, 0.0, 1e-5);
    let got: Vec<f32> = gpu(|| arr(&x).cos());
    let want: Vec<f32> = x.iter().map(|&v| (v as f64).cos() as f32).collect();
    assert_close("cos", &got, &want, 0.0, 1e-5);
    let got: Vec<f32> = gpu(|| arr(&x).tan());
    let want: Vec<f32> = x.iter().map(|&v| (v as f64).tan() as f32).collect();
    assert_close("tan", &got, &want, 1e-4, 1e-5);
    let sp: Vec<f32> = gpu(|| arr(&[f32::INFINITY, f32::NAN, -f32::INFINITY]).sin());
    assert!(sp.iter().all(|v| v.is_nan()), "sin of inf/nan: {sp:?}");
    // float16 goes through the same f32 code.
    let got: Vec<f16> = gpu(|| arr16(&[30000.0, -1000.0]).sin());
    let want = [(f16::from_f32(30000.0).to_f64()).sin(), (-1000f64).sin()];
    assert_close("f16 sin", &[got[0].to_f64(), got[1].to_f64()], &want, 0.0, 1e-3);
}

/// log and log2 over (0.4, 2], where the result can be small: relatively accurate on the
/// GPU (the driver's own log is only absolutely accurate there: WGSL allows 2^-21 in [0.5,
/// 2], and lavapipe gave log(0.99999994) 73% off and log(0.9999) 3e-4 off), within 4 ulps
/// of the f64 reference of the same f32 input (lavapipe: 1.69 and 2.66), as on the CPU.
#[test]
fn logs_near_one_are_relatively_accurate() {
    if !gpu_available() {
        return;
    }
    let mut x: Vec<f32> =
        (1..=64).flat_map(|k| [f32::from_bits(1f32.to_bits() + k), f32::from_bits(1f32.to_bits() - k)]).collect();
    // |x - 1| from 1e-7 to 0.6 on both sides: across the series' lower edge at 0.5.
    for i in 0..400 {
        let d = 1e-7f32 * 10f32.powf(i as f32 * 6.78 / 400.0);
        x.extend([1.0 + d, 1.0 - d]);
    }
    // Up to its upper edge at 2.
    x.extend((0..200).map(|i| 1.6 + 0.4 * i as f32 / 200.0));
    x.extend([0.5, 0.5000001, 1.9999999, 2.0, 1.0]);
    type Case = (&'static str, fn(&Array) -> Result<Array>, fn(f64) -> f64);
    let cases: [Case; 2] = [("log", |a| a.log(), f64::ln), ("log2", |a| a.log2(), f64::log2)];
    for (name, op, reference) in cases {
        // Alone, and fused after a multiply by one (a generated kernel on the GPU).
        for (device, fused) in [(Device::gpu(0), false), (Device::gpu(0), true), (Device::cpu(), false)] {
            let got: Vec<f32> =
                on(device, || if fused { op(&arr(&x).mul(1.0)?) } else { op(&arr(&x)) }?.to_vec()).unwrap();
            let (worst, at) = worst_ulps(name, &x, &got, reference);
            assert!(worst <= 4.0, "{name} on {device:?} (fused: {fused}): {worst:.2} ulps at {at:e}");
        }
    }
}
