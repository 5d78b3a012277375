//! GPU/CPU parity: every op family runs on every available device (the CPU always,
//! `gpu(0)` when an adapter exists; see `common::gpu_available` for the skip rule) and is
//! compared with the CPU backend through the public API.
//!
//! Tolerances (|gpu - cpu| <= abs + rel * |cpu|; NaN must match NaN, infinities match
//! exactly; integers and bools always exact):
//! - `ELEM` rel 1e-5, abs 1e-6: f32 arithmetic, rounding, comparisons' inputs. GPU division
//!   is not always correctly rounded (Vulkan allows 2.5 ulp).
//! - `TRANS` rel 1e-4, abs 1e-5: exp, log, pow, tanh, erf... (Vulkan allows ~3 ulp plus
//!   an absolute 2^-21 for log near 1; expm1/log1p/erf are built from those).
//! - `TRIG` rel 1e-4, abs 1e-3: sin, cos, tan on [-3, 3] (Vulkan bounds sin/cos only by an
//!   absolute 2^-11).
//! - `RED` rel 1e-4, abs 1e-4: reductions, scans, matmul in f32 (the GPU accumulates in
//!   f32 in a tree or sequence; the CPU in f64), on values in [-1, 1] or [-3, 3].
//! - `HALF` rel 2e-3, abs 1e-3: float16 results (one or two f16 ulps).

use crate::common;

use common::{devices, gpu_available, on, values};
use lazuli::{Array, DType, Device, Error, Result, SliceArg};

#[derive(Clone, Copy, Debug)]
struct Tol {
    rel: f64,
    abs: f64,
}

const EXACT: Tol = Tol { rel: 0.0, abs: 0.0 };
const ELEM: Tol = Tol { rel: 1e-5, abs: 1e-6 };
const TRANS: Tol = Tol { rel: 1e-4, abs: 1e-5 };
const TRIG: Tol = Tol { rel: 1e-4, abs: 1e-3 };
const RED: Tol = Tol { rel: 1e-4, abs: 1e-4 };
const HALF: Tol = Tol { rel: 2e-3, abs: 1e-3 };

/// Odd sizes around workgroup boundaries.
const SIZES: [usize; 8] = [1, 7, 33, 129, 255, 257, 1025, 4099];

struct Host {
    shape: Vec<usize>,
    dtype: DType,
    bytes: Vec<u8>,
}

fn fetch(a: &Array) -> Result<Host> {
    Ok(Host { shape: a.shape().to_vec(), dtype: a.dtype(), bytes: a.to_bytes()? })
}

fn as_f64(h: &Host) -> Vec<f64> {
    let s = h.dtype.size();
    h.bytes
        .chunks_exact(s)
        .map(|b| match h.dtype {
            DType::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
            DType::F16 => half::f16::from_le_bytes([b[0], b[1]]).to_f64(),
            DType::F64 => f64::from_le_bytes(b.try_into().unwrap()),
            _ => unreachable!(),
        })
        .collect()
}

fn compare(what: &str, dev: Device, want: &Host, got: &Host, tol: Tol) {
    assert_eq!(got.shape, want.shape, "{what} on {dev}: shape");
    assert_eq!(got.dtype, want.dtype, "{what} on {dev}: dtype");
    if !want.dtype.is_float() {
        if got.bytes != want.bytes {
            let i = got.bytes.iter().zip(&want.bytes).position(|(a, b)| a != b).unwrap_or(0) / want.dtype.size();
            panic!("{what} on {dev}: element {i} differs ({:?} exact)", want.dtype);
        }
        return;
    }
    let tol = if want.dtype == DType::F16 && tol.rel < HALF.rel { HALF } else { tol };
    common::assert_close(&format!("{what} on {dev}"), &as_f64(got), &as_f64(want), tol.rel, tol.abs);
}

/// Runs `f` on every device and compares each result with the CPU's.
fn check(what: &str, tol: Tol, f: impl Fn() -> Result<Array>) {
    let want = on(Device::cpu(), || fetch(&f()?)).unwrap_or_else(|e| panic!("{what} on cpu: {e}"));
    for dev in devices().into_iter().skip(1) {
        let got = on(dev, || fetch(&f()?)).unwrap_or_else(|e| panic!("{what} on {dev}: {e}"));
        compare(what, dev, &want, &got, tol);
    }
}

/// Like [`check`], but a device that reports `Unsupported` (f16 without SHADER_F16) is
/// skipped for this case.
fn check_f16(what: &str, tol: Tol, f: impl Fn() -> Result<Array>) {
    let want = on(Device::cpu(), || fetch(&f()?)).unwrap_or_else(|e| panic!("{what} on cpu: {e}"));
    for dev in devices().into_iter().skip(1) {
        match on(dev, || fetch(&f()?)) {
            Ok(got) => compare(what, dev, &want, &got, tol),
            // An adapter without SHADER_F16: the GPU backend refuses f16.
            Err(e) if matches!(e.root_cause(), Error::Unsupported { backend, .. } if backend == "gpu") => {}
            Err(e) => panic!("{what} on {dev}: {e}"),
        }
    }
}

fn f32s(n: usize, seed: u64, lo: f32, hi: f32, shape: &[usize]) -> Result<Array> {
    Array::from_slice(&values(n, seed, lo, hi), shape)
}

fn i32s(n: usize, seed: u64, lo: i32, hi: i32, shape: &[usize]) -> Result<Array> {
    let v: Vec<i32> = values(n, seed, lo as f32, hi as f32).into_iter().map(|x| x.floor() as i32).collect();
    Array::from_slice(&v, shape)
}

fn specials() -> Result<Array> {
    let v = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        0.5,
        1.5,
        2.5,
        -2.5,
        1e-7,
        -1e-5,
        20.0,
        -20.0,
        3.0e4,
    ];
    Array::from_slice(&v, &[v.len()])
}

#[test]
fn unary_ops() {
    type Op = fn(&Array) -> Result<Array>;
    let exact_ops: [(&str, Op); 8] = [
        ("neg", Array::neg),
        ("abs", Array::abs),
        ("sign", Array::sign),
        ("floor", Array::floor),
        ("ceil", Array::ceil),
        ("round", Array::round),
        ("isnan", Array::isnan),
        ("isinf", Array::isinf),
    ];
    let trans_ops: [(&str, Op, Tol); 15] = [
        ("square", Array::square, ELEM),
        ("exp", Array::exp, TRANS),
        ("expm1", Array::expm1, TRANS),
        ("log", Array::log, TRANS),
        ("log1p", Array::log1p, TRANS),
        ("log2", Array::log2, TRANS),
        ("sqrt", Array::sqrt, ELEM),
        ("rsqrt", Array::rsqrt, TRANS),
        ("reciprocal", Array::reciprocal, ELEM),
        ("sin", Array::sin, TRIG),
        ("cos", Array::cos, TRIG),
        ("tan", Array::tan, TRIG),
        ("tanh", Array::tanh, TRANS),
        ("sigmoid", Array::sigmoid, TRANS),
        ("erf", Array::erf, TRANS),
    ];
    for &n in &SIZES {
        for (name, op) in exact_ops {
            check(&format!("{name} f32 n={n}"), EXACT, || op(&f32s(n, 1, -3.0, 3.0, &[n])?));
            check(&format!("{name} i32 n={n}"), EXACT, || op(&i32s(n, 2, -50, 50, &[n])?));
        }
        for (name, op, tol) in trans_ops {
            // tan keeps clear of its poles, where any ulp of argument error is amplified
            // past a relative tolerance (NVIDIA's tan differed by 2e-4 near pi/2 * 0.99).
            let r = if name == "tan" { 1.2 } else { 3.0 };
            check(&format!("{name} f32 n={n}"), tol, || op(&f32s(n, 3, -r, r, &[n])?));
        }
    }
    for (name, op) in exact_ops {
        check(&format!("{name} specials"), EXACT, || op(&specials()?));
    }
    for (name, op, tol) in trans_ops {
        // WGSL bounds sin/cos/tan's error only on [-pi, pi]; NVIDIA's sin(3e4) is 1.3e-3
        // off, so the trig ops leave out the last special (3e4).
        let trig = matches!(name, "sin" | "cos" | "tan");
        check(&format!("{name} specials"), tol, || {
            let s = specials()?;
            op(&if trig { s.slice(&[(..15).into()])? } else { s })
        });
    }
    check("logical_not bool", EXACT, || Array::from_slice(&[true, false, true], &[3])?.logical_not());
    check("logical_not f32", EXACT, || specials()?.logical_not());
    check("neg u32", EXACT, || Array::from_slice(&[0u32, 1, 7, u32::MAX], &[4])?.neg());
    check("abs i32 min", EXACT, || Array::from_slice(&[i32::MIN, -3, 0, 5], &[4])?.abs());
    // Integer input to float ops is cast to f32 first.
    check("exp of i32", TRANS, || i32s(33, 4, -5, 5, &[33])?.exp());
    // erfinv: the GPU's single-precision approximation against the CPU's f64-refined one.
    for &n in &SIZES {
        check(&format!("erfinv f32 n={n}"), TRANS, || f32s(n, 5, -0.999, 0.999, &[n])?.erfinv());
    }
    check("erfinv edges", TRANS, || Array::from_slice(&[1.0f32, -1.0, 1.5, -2.0, f32::NAN, 0.0, -0.0], &[7])?.erfinv());
    // atan2 with C's signed zeros and infinities, and broadcasting.
    let inf = f32::INFINITY;
    check("atan2 specials", TRIG, || {
        let y = Array::from_slice(&[1.0f32, -1.0, 0.0, -0.0, 0.0, 3.0, -2.0, inf, -inf, inf, 1.0, -0.0], &[12])?;
        let x = Array::from_slice(&[-1.0f32, -1.0, -0.0, -0.0, 1.0, 0.0, inf, inf, -inf, -inf, f32::NAN, 2.0], &[12])?;
        y.atan2(&x)
    });
    check("atan2 broadcast", TRIG, || f32s(33, 6, -3.0, 3.0, &[33, 1])?.atan2(&f32s(7, 7, -3.0, 3.0, &[1, 7])?));
}

#[test]
fn binary_ops() {
    type Op = fn(&Array, &Array) -> Result<Array>;
    let ops: [(&str, Op, Tol); 15] = [
        ("add", |a, b| a.add(b), ELEM),
        ("sub", |a, b| a.sub(b), ELEM),
        ("mul", |a, b| a.mul(b), ELEM),
        ("div", |a, b| a.div(b), ELEM),
        ("pow", |a, b| a.abs()?.add(0.5)?.pow(b), TRANS),
        ("remainder", |a, b| a.remainder(b), ELEM),
        ("floor_divide", |a, b| a.floor_divide(b), ELEM),
        ("maximum", |a, b| a.maximum(b), EXACT),
        ("minimum", |a, b| a.minimum(b), EXACT),
        ("eq", |a, b| a.eq(b), EXACT),
        ("ne", |a, b| a.ne(b), EXACT),
        ("lt", |a, b| a.lt(b), EXACT),
        ("le", |a, b| a.le(b), EXACT),
        ("gt", |a, b| a.gt(b), EXACT),
        ("ge", |a, b| a.ge(b), EXACT),
    ];
    // Broadcasting pairs: same shape, row x column, trailing vector, scalar, rank 5.
    let shapes: [(&[usize], &[usize]); 6] = [
        (&[257], &[257]),
        (&[33, 1], &[1, 7]),
        (&[5, 129], &[129]),
        (&[1025], &[]),
        (&[2, 1, 3, 1, 5], &[4, 1, 6, 1]),
        (&[], &[7, 3]),
    ];
    for (name, op, tol) in ops {
        for (sa, sb) in shapes {
            let (na, nb) = (sa.iter().product(), sb.iter().product());
            check(&format!("{name} f32 {sa:?} {sb:?}"), tol, || {
                op(&f32s(na, 5, -3.0, 3.0, sa)?, &f32s(nb, 6, -3.0, 3.0, sb)?)
            });
            // Integers: exact, including division by zero (gives 0) and negatives; true
            // division gives f32, and WGSL's f32 division need not be correctly rounded
            // (NVIDIA's was 1 ulp off), so it takes the float tolerance.
            let itol = if name == "div" { tol } else { EXACT };
            check(&format!("{name} i32 {sa:?} {sb:?}"), itol, || {
                let a = i32s(na, 7, -20, 20, sa)?;
                let b = i32s(nb, 8, -4, 4, sb)?;
                if name == "pow" { a.pow(&b.abs()?) } else { op(&a, &b) }
            });
        }
        check(&format!("{name} specials"), tol, || {
            let s = specials()?;
            op(&s.reshape(&[16, 1])?, &s)
        });
    }
    check("u32 ops", EXACT, || {
        let a = Array::from_slice(&[0u32, 1, 7, 100, u32::MAX, 12], &[6])?;
        let b = Array::from_slice(&[3u32, 0, 2, 7, 2, 5], &[6])?;
        let r = a.floor_divide(&b)?.add(&a.remainder(&b)?)?.add(&a.mul(&b)?)?.sub(&b)?;
        lazuli::concatenate(&[&r, &a.pow(&b)?, &a.maximum(&b)?], 0)
    });
    check("i32 extremes", EXACT, || {
        let a = Array::from_slice(&[i32::MIN, i32::MIN, i32::MAX, -7, 7, -7], &[6])?;
        let b = Array::from_slice(&[-1i32, 1, 1, 2, -2, -2], &[6])?;
        lazuli::concatenate(&[&a.floor_divide(&b)?, &a.remainder(&b)?, &a.add(&b)?, &a.mul(&b)?], 0)
    });
    check("bool logic", EXACT, || {
        let a = Array::from_slice(&[true, true, false, false], &[4, 1])?;
        let b = Array::from_slice(&[true, false, true, false], &[4])?;
        lazuli::concatenate(
            &[&a.logical_and(&b)?, &a.logical_or(&b)?, &a.logical_xor(&b)?, &a.maximum(&b)?, &a.eq(&b)?],
            0,
        )
    });
    check("f32 operators with scalars", ELEM, || {
        let a = f32s(129, 9, -2.0, 2.0, &[129])?;
        ((&a * 2.5)? - 1.0)?.div(&a.add(4.0f32)?)
    });
}

#[test]
fn select_op() {
    for (sc, sa, sb) in [
        (&[257usize][..], &[257usize][..], &[257usize][..]),
        (&[33, 1], &[1, 7], &[]),
        (&[5, 1, 3], &[4, 1], &[5, 4, 3]),
    ] {
        check(&format!("where {sc:?} {sa:?} {sb:?}"), EXACT, || {
            let c = f32s(sc.iter().product(), 10, -1.0, 1.0, sc)?.gt(0.0f32)?;
            let a = f32s(sa.iter().product(), 11, -1.0, 1.0, sa)?;
            let b = f32s(sb.iter().product(), 12, -1.0, 1.0, sb)?;
            lazuli::where_(&c, &a, &b)
        });
    }
    check("where i32", EXACT, || {
        let c = Array::from_slice(&[true, false, true], &[3])?;
        lazuli::where_(&c, &i32s(3, 1, -9, 9, &[3])?, &i32s(6, 2, -9, 9, &[2, 3])?)
    });
    check("where bool", EXACT, || {
        let c = Array::from_slice(&[true, false], &[2, 1])?;
        lazuli::where_(&c, &Array::from_slice(&[true, false, true], &[3])?, &Array::from_slice(&[false], &[1])?)
    });
}

#[test]
fn astype_ops() {
    let dtypes = [DType::Bool, DType::U32, DType::I32, DType::F32, DType::F16];
    for from in dtypes {
        for to in dtypes {
            check_f16(&format!("astype {from} -> {to}"), EXACT, || {
                let v = [0.0f32, -0.0, 1.0, -1.0, 2.5, -2.5, 3.7e9, -3.7e9, 65519.0, 70000.0, f32::NAN, 1e-3, 255.9];
                let mut src = Array::from_slice(&v, &[v.len()])?;
                if from == DType::F16 {
                    // Keep values f16 can hold, so the comparison is about the conversion.
                    src = src.maximum(-60000.0f32)?.minimum(60000.0f32)?;
                }
                src.astype(from)?.astype(to)
            });
        }
    }
    check("astype i32 -> f32 large", EXACT, || {
        Array::from_slice(&[16777217i32, -16777219, i32::MAX, i32::MIN], &[4])?.astype(DType::F32)
    });
    check("astype u32 -> f32 -> i32", EXACT, || {
        Array::from_slice(&[u32::MAX, 3_000_000_000, 5], &[3])?.astype(DType::F32)?.astype(DType::I32)
    });
}

#[test]
fn creation_ops() {
    for dtype in [DType::F32, DType::I32, DType::U32, DType::Bool] {
        check(&format!("full {dtype}"), EXACT, || lazuli::full(&[33, 7], 2.75, dtype));
        check(&format!("zeros {dtype}"), EXACT, || lazuli::zeros(&[1025], dtype));
        check(&format!("ones {dtype}"), EXACT, || lazuli::ones(&[3, 1, 5], dtype));
        check(&format!("eye {dtype}"), EXACT, || lazuli::eye(7, Some(5), 1, dtype));
    }
    check_f16("full f16", EXACT, || lazuli::full(&[7], -1.5e-3, DType::F16));
    check_f16("full f16 odd length", EXACT, || lazuli::full(&[1], 3.0, DType::F16));
    check("arange f32", EXACT, || lazuli::arange(-3.0, 10.0, 0.1, DType::F32));
    check("arange f32 large", EXACT, || lazuli::arange(0.0, 5000.0, 0.37, DType::F32));
    check("arange i32", EXACT, || lazuli::arange(-100.0, 1000.0, 3.0, DType::I32));
    check("arange i32 fractional step", EXACT, || lazuli::arange(0.0, 10.0, 0.1, DType::I32));
    check("arange u32", EXACT, || lazuli::arange(5.0, 4000.0, 7.0, DType::U32));
    check("linspace f32", ELEM, || lazuli::linspace(-1.0, 1.0, 129, DType::F32));
}

#[test]
fn views_and_copies() {
    for &n in &[1usize, 7, 33, 257] {
        check(&format!("transpose {n}x5"), EXACT, || f32s(n * 5, 20, -1.0, 1.0, &[n, 5])?.transpose(&[1, 0]));
        check(&format!("transpose 3d n={n}"), EXACT, || {
            i32s(n * 6, 21, -99, 99, &[2, n, 3])?.transpose(&[2, 0, 1])?.add(1)
        });
        check(&format!("flip n={n}"), EXACT, || f32s(n * 3, 22, -1.0, 1.0, &[3, n])?.flip(&[0, 1]));
        check(&format!("slice step n={n}"), EXACT, || {
            f32s(n * 4, 23, -1.0, 1.0, &[n, 4])?
                .slice(&[SliceArg::new(None, None, -2), SliceArg::new(Some(1), None, 2)])
        });
        check(&format!("broadcast_to n={n}"), EXACT, || f32s(n, 24, -1.0, 1.0, &[n, 1])?.broadcast_to(&[3, n, 4]));
        check(&format!("reshape of transpose n={n}"), EXACT, || {
            f32s(n * 4, 25, -1.0, 1.0, &[n, 4])?.transpose(&[1, 0])?.reshape(&[-1])
        });
    }
    check("bool transpose", EXACT, || f32s(35, 26, -1.0, 1.0, &[5, 7])?.gt(0.0f32)?.transpose(&[1, 0]));
    check("concatenate axis 0", EXACT, || {
        let a = f32s(6, 27, -1.0, 1.0, &[2, 3])?;
        let b = f32s(0, 28, -1.0, 1.0, &[0, 3])?;
        let c = f32s(15, 29, -1.0, 1.0, &[5, 3])?;
        lazuli::concatenate(&[&a, &b, &c], 0)
    });
    check("concatenate axis 1 non-contiguous", EXACT, || {
        let a = i32s(33 * 4, 30, -9, 9, &[4, 33])?;
        let b = i32s(4 * 7, 31, -9, 9, &[7, 4])?.transpose(&[1, 0])?;
        lazuli::concatenate(&[&a, &b, &a], 1)
    });
    check("stack", EXACT, || {
        let a = f32s(7, 32, -1.0, 1.0, &[7])?;
        lazuli::stack(&[&a, &a.neg()?, &a], 1)
    });
    check("pad", EXACT, || f32s(12, 33, -1.0, 1.0, &[3, 4])?.pad(&[(1, 2), (0, 3)], -5.0));
    check("tile", EXACT, || i32s(6, 34, -9, 9, &[2, 3])?.tile(&[3, 2]));
    check("repeat", EXACT, || i32s(6, 35, -9, 9, &[2, 3])?.repeat(3, Some(1)));
    check("triu", EXACT, || f32s(35, 36, -1.0, 1.0, &[5, 7])?.triu(1));
    check("to_device round trip", EXACT, || f32s(9, 37, -1.0, 1.0, &[9])?.to_device(Device::cpu())?.add(1.0f32));
}

#[test]
fn reductions() {
    // Rows long enough for the workgroup path (>= 256) and short ones, columns, all axes.
    let cases: [(&[usize], &[isize]); 9] = [
        (&[1], &[0]),
        (&[1025], &[0]),
        (&[7, 33], &[1]),
        (&[7, 33], &[0]),
        (&[3, 4099], &[-1]),
        (&[5, 6, 7], &[0, 2]),
        (&[5, 6, 7], &[1, 2]),
        (&[2, 3, 4, 5], &[]),
        (&[300, 3], &[0]),
    ];
    for (shape, axes) in cases {
        let n: usize = shape.iter().product();
        check(&format!("sum f32 {shape:?} {axes:?}"), RED, || f32s(n, 40, -1.0, 1.0, shape)?.sum(axes, false));
        check(&format!("prod f32 {shape:?} {axes:?}"), RED, || f32s(n, 41, 0.9, 1.1, shape)?.prod(axes, true));
        check(&format!("max f32 {shape:?} {axes:?}"), EXACT, || f32s(n, 42, -1.0, 1.0, shape)?.max(axes, false));
        check(&format!("min f32 {shape:?} {axes:?}"), EXACT, || f32s(n, 43, -1.0, 1.0, shape)?.min(axes, true));
        check(&format!("mean f32 {shape:?} {axes:?}"), RED, || f32s(n, 44, -1.0, 1.0, shape)?.mean(axes, false));
        check(&format!("sum i32 {shape:?} {axes:?}"), EXACT, || i32s(n, 45, -1000, 1000, shape)?.sum(axes, false));
        check(&format!("max i32 {shape:?} {axes:?}"), EXACT, || i32s(n, 46, -1000, 1000, shape)?.max(axes, false));
        check(&format!("any {shape:?} {axes:?}"), EXACT, || {
            f32s(n, 47, -1.0, 1.0, shape)?.gt(0.9f32)?.any(axes, false)
        });
        check(&format!("all {shape:?} {axes:?}"), EXACT, || {
            f32s(n, 48, -1.0, 1.0, shape)?.gt(-0.9f32)?.all(axes, false)
        });
    }
    check("sum i32 wraps", EXACT, || lazuli::full(&[1000], 2.0e9, DType::I32)?.sum(&[0], false));
    check("max with NaN", EXACT, || specials()?.reshape(&[4, 4])?.max(&[1], false));
    check("sum over empty axis", EXACT, || lazuli::zeros(&[3, 0], DType::F32)?.sum(&[1], false));
    check("var", RED, || f32s(257 * 3, 49, -1.0, 1.0, &[3, 257])?.var(&[1], false, 1));
    check("softmax", RED, || f32s(33 * 5, 50, -3.0, 3.0, &[5, 33])?.softmax(&[-1]));
    check("logsumexp", RED, || f32s(1025, 51, -3.0, 3.0, &[1025])?.logsumexp(&[0], false));
    for (shape, axis) in [(&[1usize][..], 0isize), (&[1025], 0), (&[7, 33], 1), (&[7, 33], 0), (&[3, 5, 4], 1)] {
        let n: usize = shape.iter().product();
        check(&format!("argmax {shape:?} {axis}"), EXACT, || f32s(n, 52, -1.0, 1.0, shape)?.argmax(axis, false));
        check(&format!("argmin {shape:?} {axis}"), EXACT, || i32s(n, 53, -3, 3, shape)?.argmin(axis, true));
        for reverse in [false, true] {
            let tag = format!("{shape:?} axis {axis} reverse {reverse}");
            check(&format!("cumsum f32 {tag}"), RED, || f32s(n, 54, -1.0, 1.0, shape)?.cumsum(axis, reverse));
            check(&format!("cumprod f32 {tag}"), RED, || f32s(n, 55, 0.9, 1.1, shape)?.cumprod(axis, reverse));
            check(&format!("cummax f32 {tag}"), EXACT, || f32s(n, 56, -1.0, 1.0, shape)?.cummax(axis, reverse));
            check(&format!("cummin i32 {tag}"), EXACT, || i32s(n, 57, -99, 99, shape)?.cummin(axis, reverse));
            check(&format!("cumsum i32 {tag}"), EXACT, || i32s(n, 58, -99, 99, shape)?.cumsum(axis, reverse));
        }
    }
    check("argmax ties and NaN", EXACT, || {
        let a = Array::from_slice(&[1.0f32, 3.0, 3.0, 0.0, f32::NAN, 2.0, f32::NAN, 1.0], &[2, 4])?;
        lazuli::concatenate(&[&a.argmax(1, false)?, &a.argmin(1, false)?], 0)
    });
    check("sum of transposed view", RED, || {
        f32s(33 * 7, 59, -1.0, 1.0, &[33, 7])?.transpose(&[1, 0])?.sum(&[1], false)
    });
}

#[test]
fn index_ops() {
    for idx_dtype in [DType::I32, DType::U32] {
        check(&format!("take {idx_dtype}"), EXACT, || {
            let a = f32s(33 * 5, 60, -1.0, 1.0, &[33, 5])?;
            let idx = Array::from_slice(&[0i32, 32, 5, 5, 40, 1], &[6])?.astype(idx_dtype)?;
            a.take(&idx, Some(0))
        });
        check(&format!("take_along_axis {idx_dtype}"), EXACT, || {
            let a = i32s(7 * 9, 61, -99, 99, &[7, 9])?;
            let idx = i32s(7 * 4, 62, 0, 9, &[7, 4])?.astype(idx_dtype)?;
            a.take_along_axis(&idx, 1)
        });
        check(&format!("scatter {idx_dtype}"), EXACT, || {
            let a = f32s(6 * 4, 63, -1.0, 1.0, &[6, 4])?;
            let idx = Array::from_slice(&[0i32, 5, 2, 3, 1, 1, 4, 2], &[2, 4])?.astype(idx_dtype)?;
            let upd = f32s(8, 64, 5.0, 6.0, &[2, 4])?;
            a.scatter(&idx, &upd, 0)
        });
    }
    check("take negative and clamped", EXACT, || {
        let a = f32s(10, 65, -1.0, 1.0, &[10])?;
        a.take(&Array::from_slice(&[-1i32, -10, -11, 9, 10, 1000], &[6])?, Some(0))
    });
    check("take flattened", EXACT, || {
        let a = f32s(12, 66, -1.0, 1.0, &[3, 4])?;
        a.take(&Array::from_slice(&[0i32, 11, 5], &[3])?, None)
    });
    check("scatter_add repeated f32", ELEM, || {
        let a = lazuli::zeros(&[5, 3], DType::F32)?;
        let idx = Array::from_slice(&[1i32, 1, 4, 1, 0, -1, 7, 2, 2, 1, 1, 1], &[4, 3])?;
        let upd = f32s(12, 67, -1.0, 1.0, &[4, 3])?;
        a.scatter_add(&idx, &upd, 0)
    });
    check("scatter_add i32 axis 1", EXACT, || {
        let a = i32s(3 * 6, 68, -9, 9, &[3, 6])?;
        let idx = i32s(3 * 10, 69, -6, 6, &[3, 10])?;
        let upd = i32s(3 * 10, 70, -99, 99, &[3, 10])?;
        a.scatter_add(&idx, &upd, 1)
    });
}

/// Small outputs with a long K: the GPU splits K into slabs (a batched matmul into
/// partials, then a sum), on the vec4 path, the scalar one and with transposed operands.
#[test]
fn matmul_long_k_splits() {
    let cases: [(&[usize], &[usize], bool, bool); 4] = [
        (&[40, 4096], &[4096, 36], false, false),
        (&[9, 8192], &[8192, 37], false, false),
        (&[4096, 24], &[4096, 20], true, false),
        (&[16, 2048], &[12, 2048], false, true),
    ];
    for (sa, sb, ta, tb) in cases {
        check(&format!("matmul long K {sa:?}{ta} {sb:?}{tb}"), RED, || {
            transposed_matmul((sa, ta, 92), (sb, tb, 93), DType::F32)
        });
    }
}

/// `a @ b` of values in [-1, 1] (from the seeds) stored with shapes `sa` and `sb` and
/// given `dtype`, each operand's last two axes swapped where its flag says.
fn transposed_matmul(
    (sa, ta, seed_a): (&[usize], bool, u64),
    (sb, tb, seed_b): (&[usize], bool, u64),
    dtype: DType,
) -> Result<Array> {
    let operand = |shape: &[usize], swap: bool, seed: u64| {
        let x = f32s(shape.iter().product(), seed, -1.0, 1.0, shape)?.astype(dtype)?;
        if swap { x.swapaxes(-1, -2) } else { Ok(x) }
    };
    operand(sa, ta, seed_a)?.matmul(&operand(sb, tb, seed_b)?)
}

#[test]
fn matmul_ops() {
    let cases: [(&[usize], &[usize]); 12] = [
        // Multiples of 4 take the tuned kernel's vec4 path (and, for f16 on adapters with
        // cooperative matrices, the tensor-core kernel); several tiles, broadcast batch,
        // K not a multiple of the slab depth, M not a multiple of the tile.
        (&[260, 132], &[132, 68]),
        (&[2, 300, 520], &[2, 520, 136]),
        (&[1030, 68], &[68, 260]),
        (&[256, 128], &[128, 512]),
        (&[3, 64, 64], &[64, 64]),
        // Batch dims that cannot merge into one axis: the simple kernel.
        (&[2, 1, 9, 12], &[1, 3, 12, 8]),
        (&[1, 1], &[1, 1]),
        (&[7, 33], &[33, 5]),
        (&[17, 16], &[16, 17]),
        (&[2, 3, 17, 19], &[1, 19, 9]),
        (&[65, 40], &[3, 40, 33]),
        (&[129, 70], &[70, 31]),
    ];
    for (sa, sb) in cases {
        let (na, nb) = (sa.iter().product(), sb.iter().product());
        check(&format!("matmul {sa:?} {sb:?}"), RED, || {
            f32s(na, 80, -1.0, 1.0, sa)?.matmul(&f32s(nb, 81, -1.0, 1.0, sb)?)
        });
        check_f16(&format!("matmul f16 {sa:?} {sb:?}"), HALF, || {
            let a = f32s(na, 82, -1.0, 1.0, sa)?.astype(DType::F16)?;
            a.matmul(&f32s(nb, 83, -1.0, 1.0, sb)?.astype(DType::F16)?)
        });
    }
    check("matmul of transposed views", RED, || {
        let a = f32s(33 * 7, 84, -1.0, 1.0, &[33, 7])?.transpose(&[1, 0])?;
        let b = f32s(5 * 33, 85, -1.0, 1.0, &[5, 33])?.transpose(&[1, 0])?;
        a.matmul(&b)
    });
    // Transposed operands are read in place (kernel flags): vec4 and scalar paths, batched
    // (tuned kernel), unmergeable batch dims (simple kernel), f16 (the aligned ones on the
    // tensor-core kernel where the adapter has it).
    let trans: [(&[usize], &[usize], bool, bool); 7] = [
        (&[64, 96], &[32, 64], true, true),
        (&[2, 40, 36], &[2, 44, 40], true, true),
        (&[132, 260], &[132, 68], true, false),
        (&[260, 132], &[68, 132], false, true),
        (&[3, 40, 65], &[3, 36, 40], true, true),
        (&[2, 1, 12, 9], &[1, 3, 12, 8], true, false),
        (&[7, 33], &[5, 7], true, true),
    ];
    for (sa, sb, ta, tb) in trans {
        check(&format!("matmul transposed {sa:?}{ta} {sb:?}{tb}"), RED, || {
            transposed_matmul((sa, ta, 88), (sb, tb, 89), DType::F32)
        });
        check_f16(&format!("matmul f16 transposed {sa:?}{ta} {sb:?}{tb}"), HALF, || {
            transposed_matmul((sa, ta, 90), (sb, tb, 91), DType::F16)
        });
    }
    check("matmul K = 0", EXACT, || lazuli::zeros(&[3, 0], DType::F32)?.matmul(&lazuli::zeros(&[0, 4], DType::F32)?));
    check("matmul vector", RED, || f32s(19, 86, -1.0, 1.0, &[19])?.matmul(&f32s(19 * 3, 87, -1.0, 1.0, &[19, 3])?));
}

#[test]
fn random_ops() {
    use lazuli::random;
    check("random bits via randint", EXACT, || random::randint(&random::key(42)?, &[1025], -1000, 1000, DType::I32));
    check("random split", EXACT, || random::split(&random::key(7)?, 5));
    check("uniform", ELEM, || random::uniform(&random::key(1)?, &[257], -2.0, 3.0, DType::F32));
    check("normal", TRANS, || random::normal(&random::key(2)?, &[33, 3], 0.0, 1.0, DType::F32));
    check("bernoulli", EXACT, || random::bernoulli(&random::key(3)?, 0.3, &[129]));
}

#[test]
fn empty_arrays() {
    check("add empty", EXACT, || f32s(0, 1, 0.0, 1.0, &[0])?.add(1.0f32));
    check("add empty broadcast", EXACT, || f32s(0, 1, 0.0, 1.0, &[3, 0])?.add(&f32s(0, 2, 0.0, 1.0, &[0])?));
    check("sum of empty over kept axis", EXACT, || f32s(0, 1, 0.0, 1.0, &[0, 3])?.sum(&[1], false));
    check("transpose empty", EXACT, || f32s(0, 1, 0.0, 1.0, &[0, 3])?.transpose(&[1, 0]));
    check("concatenate empties", EXACT, || {
        let e = f32s(0, 1, 0.0, 1.0, &[0, 2])?;
        lazuli::concatenate(&[&e, &e], 0)
    });
}

#[test]
fn large_arrays_use_2d_dispatch() {
    // More than 65535 * 256 elements: the grid wraps into a second dimension.
    let n = 65535 * 256 + 1001;
    check("arange*3-1 large", EXACT, || lazuli::arange(0.0, n as f64, 1.0, DType::I32)?.mul(3)?.sub(1));
    check("sum large", EXACT, || lazuli::ones(&[n], DType::I32)?.sum(&[0], false));
}

#[test]
fn gpu_errors_are_results() {
    if !gpu_available() {
        return;
    }
    assert!(matches!(lazuli::default_stream(Device::gpu(1)), Err(Error::Device(_))));
    let r = on(Device::gpu(0), || Array::from_slice(&[1.0f64, 2.0], &[2])?.exp()?.to_vec::<f64>());
    match r {
        Err(e) => {
            assert!(matches!(e.root_cause(), Error::Unsupported { backend, .. } if backend == "gpu"), "{e}");
            // The message says what to convert to.
            assert!(e.to_string().contains("astype"), "{e}");
        }
        Ok(v) => panic!("f64 on the GPU should be an Unsupported error, got {v:?}"),
    }
}
