//! Parameter initialisers: fans (PyTorch's `_calculate_fan_in_and_fan_out`), shapes and
//! dtypes, determinism per key, and sample statistics against the formulas.
//!
//! Statistics use n ≥ 18 000 samples. The tolerances are about five standard errors: for
//! the mean `5 σ / √n`; for the standard deviation `5 σ √((κ − 1) / 4n)` with kurtosis
//! κ = 1.8 (uniform) or 3 (normal), rounded up to 2% (uniform) and 3% (normal).
//! Uniform samples must also lie in `[-a, a)` and reach within 1% of both ends.

use crate::common;

use common::{devices, on};
use lazuli::nn::init::{self, FanMode};
use lazuli::{Array, DType, Error, Result, random};

fn key(seed: u64) -> Array {
    random::key(seed).unwrap()
}

fn read(a: &Array) -> Vec<f64> {
    match a.dtype() {
        DType::F64 => a.to_vec::<f64>().unwrap(),
        DType::F32 => a.to_vec::<f32>().unwrap().into_iter().map(f64::from).collect(),
        DType::F16 => a.to_vec::<half::f16>().unwrap().into_iter().map(half::f16::to_f64).collect(),
        DType::BF16 => a.to_vec::<half::bf16>().unwrap().into_iter().map(half::bf16::to_f64).collect(),
        other => panic!("not a float dtype: {other}"),
    }
}

fn stats(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

fn check_uniform(what: &str, a: &Array, bound: f64) {
    let v = read(a);
    assert!(v.iter().all(|&x| (-bound..bound).contains(&x)), "{what}: a sample outside [-{bound}, {bound})");
    let (lo, hi) = v.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    assert!(lo < -0.99 * bound && hi > 0.99 * bound, "{what}: samples span [{lo}, {hi}], bound {bound}");
    let (mean, std) = stats(&v);
    let sigma = bound / 3f64.sqrt();
    let n = v.len() as f64;
    assert!(mean.abs() < 5.0 * sigma / n.sqrt(), "{what}: mean {mean}");
    assert!((std / sigma - 1.0).abs() < 0.02, "{what}: std {std}, want {sigma}");
}

fn check_normal(what: &str, a: &Array, sigma: f64) {
    let v = read(a);
    assert!(v.iter().all(|x| x.is_finite()), "{what}: non-finite sample");
    let (mean, std) = stats(&v);
    let n = v.len() as f64;
    assert!(mean.abs() < 5.0 * sigma / n.sqrt(), "{what}: mean {mean}");
    assert!((std / sigma - 1.0).abs() < 0.03, "{what}: std {std}, want {sigma}");
}

#[test]
fn fans_follow_pytorch() {
    // Dense [out, in]: fan_in = in, fan_out = out.
    assert_eq!(init::fans(&[20, 10]).unwrap(), (10, 20));
    // Convolution [out, in, kh, kw]: both fans times the receptive field.
    assert_eq!(init::fans(&[16, 3, 5, 5]).unwrap(), (75, 400));
    assert_eq!(init::fans(&[8, 4, 3]).unwrap(), (12, 24));
    assert_eq!(init::fans(&[4, 0]).unwrap(), (0, 4));
    // Fewer than two dimensions have no fans.
    assert!(matches!(init::fans(&[10]), Err(Error::Shape { .. })));
    assert!(matches!(init::fans(&[]), Err(Error::Shape { .. })));
}

#[test]
fn statistics_match_the_formulas() {
    let dense = [192, 96]; // fan_in 96, fan_out 192, n = 18 432
    let conv = [64, 32, 3, 3]; // fan_in 288, fan_out 576, n = 18 432
    for device in devices() {
        on(device, || {
            let what = |name: &str| format!("{name} on {device}");
            let a = init::glorot_uniform(&key(1), &dense, 1.0, DType::F32)?;
            check_uniform(&what("glorot_uniform"), &a, (6.0f64 / 288.0).sqrt());
            let a = init::glorot_uniform(&key(2), &conv, 5.0 / 3.0, DType::F32)?;
            check_uniform(&what("glorot_uniform gain"), &a, 5.0 / 3.0 * (6.0f64 / (288.0 + 576.0)).sqrt());
            let a = init::glorot_normal(&key(3), &dense, 1.0, DType::F32)?;
            check_normal(&what("glorot_normal"), &a, (2.0f64 / 288.0).sqrt());
            let a = init::glorot_normal(&key(4), &conv, 2.0, DType::F32)?;
            check_normal(&what("glorot_normal gain"), &a, 2.0 * (2.0f64 / 864.0).sqrt());
            let a = init::he_uniform(&key(5), &conv, FanMode::FanIn, DType::F32)?;
            check_uniform(&what("he_uniform fan_in"), &a, (6.0f64 / 288.0).sqrt());
            let a = init::he_uniform(&key(6), &conv, FanMode::FanOut, DType::F32)?;
            check_uniform(&what("he_uniform fan_out"), &a, (6.0f64 / 576.0).sqrt());
            let a = init::he_normal(&key(7), &dense, FanMode::FanIn, DType::F32)?;
            check_normal(&what("he_normal fan_in"), &a, (2.0f64 / 96.0).sqrt());
            let a = init::he_normal(&key(8), &conv, FanMode::FanOut, DType::F32)?;
            check_normal(&what("he_normal fan_out"), &a, (2.0f64 / 576.0).sqrt());
            let a = init::uniform(&key(9), &dense, -0.5, 1.5, DType::F32)?;
            let v: Vec<f64> = read(&a).into_iter().map(|x| x - 0.5).collect();
            check_uniform(&what("uniform"), &Array::from_slice(&v, &[v.len()])?, 1.0);
            let a = init::normal(&key(10), &dense, 3.0, 0.25, DType::F32)?;
            let v: Vec<f64> = read(&a).into_iter().map(|x| x - 3.0).collect();
            check_normal(&what("normal"), &Array::from_slice(&v, &[v.len()])?, 0.25);
            Ok(())
        })
        .unwrap();
    }
}

#[test]
fn same_key_same_values() {
    let shape = [7, 5, 2];
    type Init = fn(&Array) -> Result<Array>;
    let inits: [(&str, Init); 6] = [
        ("glorot_uniform", |k| init::glorot_uniform(k, &[7, 5, 2], 1.0, DType::F32)),
        ("glorot_normal", |k| init::glorot_normal(k, &[7, 5, 2], 1.0, DType::F32)),
        ("he_uniform", |k| init::he_uniform(k, &[7, 5, 2], FanMode::FanIn, DType::F32)),
        ("he_normal", |k| init::he_normal(k, &[7, 5, 2], FanMode::FanOut, DType::F32)),
        ("uniform", |k| init::uniform(k, &[7, 5, 2], 0.0, 1.0, DType::F32)),
        ("normal", |k| init::normal(k, &[7, 5, 2], 0.0, 1.0, DType::F32)),
    ];
    for (name, f) in inits {
        let cpu = read(&f(&key(42)).unwrap());
        assert_eq!(cpu.len(), 70);
        assert_eq!(f(&key(42)).unwrap().shape(), shape);
        assert_eq!(cpu, read(&f(&key(42)).unwrap()), "{name}: same key, same values");
        assert_ne!(cpu, read(&f(&key(43)).unwrap()), "{name}: another key, other values");
        // Every device draws the same samples (transcendentals to the GPU's precision).
        for device in devices() {
            let v = on(device, || Ok(read(&f(&key(42))?))).unwrap();
            for (i, (g, c)) in v.iter().zip(&cpu).enumerate() {
                assert!((g - c).abs() <= 1e-4 * (1.0 + c.abs()), "{name} on {device}[{i}]: {g} vs {c}");
            }
        }
    }
    // The bound is a pure scale of the same uniform draw: U(-a, a) for two gains.
    let one = read(&init::glorot_uniform(&key(5), &[8, 8], 1.0, DType::F32).unwrap());
    let two = read(&init::glorot_uniform(&key(5), &[8, 8], 2.0, DType::F32).unwrap());
    for (a, b) in one.iter().zip(&two) {
        assert!((2.0 * a - b).abs() < 1e-6, "{a} {b}");
    }
}

#[test]
fn dtypes_and_constants() {
    for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
        let a = init::he_normal(&key(0), &[16, 8], FanMode::FanIn, dtype).unwrap();
        assert_eq!((a.shape(), a.dtype()), (&[16, 8][..], dtype));
        let bound = (6.0f64 / 8.0).sqrt();
        let u = init::he_uniform(&key(0), &[16, 8], FanMode::FanIn, dtype).unwrap();
        assert_eq!(u.dtype(), dtype);
        assert!(read(&u).iter().all(|&x| (-bound..bound).contains(&x)), "{dtype}");
        let g = init::glorot_normal(&key(0), &[3, 4, 5], 1.0, dtype).unwrap();
        assert_eq!(g.shape(), [3, 4, 5]);
    }
    assert_eq!(read(&init::zeros(&[2, 2], DType::F32).unwrap()), vec![0.0; 4]);
    assert_eq!(read(&init::ones(&[3], DType::F64).unwrap()), vec![1.0; 3]);
    assert_eq!(read(&init::constant(&[2], 0.5, DType::F16).unwrap()), vec![0.5; 2]);
    // Empty weights (a fan of 0) are empty arrays, not errors.
    let e = init::he_uniform(&key(0), &[4, 0], FanMode::FanIn, DType::F32).unwrap();
    assert_eq!((e.shape(), e.size()), (&[4, 0][..], 0));
    assert!(read(&e).is_empty());
    let e = init::glorot_normal(&key(0), &[0, 0, 3], 1.0, DType::F32).unwrap();
    assert_eq!(e.shape(), [0, 0, 3]);
}

#[test]
fn errors() {
    let k = key(0);
    // Fans need two dimensions.
    assert!(matches!(init::glorot_uniform(&k, &[10], 1.0, DType::F32), Err(Error::Shape { .. })));
    assert!(matches!(init::glorot_normal(&k, &[], 1.0, DType::F32), Err(Error::Shape { .. })));
    assert!(matches!(init::he_uniform(&k, &[10], FanMode::FanIn, DType::F32), Err(Error::Shape { .. })));
    let err = init::he_normal(&k, &[10], FanMode::FanOut, DType::F32).unwrap_err();
    assert!(matches!(err, Error::Shape { .. }) && err.to_string().contains("[10]"), "{err}");
    // Float dtypes only.
    assert!(matches!(init::glorot_uniform(&k, &[4, 4], 1.0, DType::I32), Err(Error::DType { .. })));
    assert!(matches!(init::he_normal(&k, &[4, 4], FanMode::FanIn, DType::Bool), Err(Error::DType { .. })));
    assert!(matches!(init::uniform(&k, &[4], 0.0, 1.0, DType::U32), Err(Error::DType { .. })));
    // Gains must be positive and finite.
    for gain in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(init::glorot_uniform(&k, &[4, 4], gain, DType::F32), Err(Error::Invalid { .. })));
        assert!(matches!(init::glorot_normal(&k, &[4, 4], gain, DType::F32), Err(Error::Invalid { .. })));
    }
    // Bad keys, even for empty weights.
    let bad = Array::from_slice(&[0i32, 1], &[2]).unwrap();
    assert!(matches!(init::he_uniform(&bad, &[4, 4], FanMode::FanIn, DType::F32), Err(Error::DType { .. })));
    assert!(matches!(init::he_uniform(&bad, &[4, 0], FanMode::FanIn, DType::F32), Err(Error::DType { .. })));
    let bad = Array::from_slice(&[0u32, 1, 2], &[3]).unwrap();
    assert!(matches!(init::glorot_normal(&bad, &[0, 4], 1.0, DType::F32), Err(Error::Shape { .. })));
    // Bounds of the plain samplers.
    assert!(matches!(init::uniform(&k, &[4], 1.0, 1.0, DType::F32), Err(Error::Invalid { .. })));
    assert!(matches!(init::normal(&k, &[4], 0.0, -1.0, DType::F32), Err(Error::Invalid { .. })));
}
