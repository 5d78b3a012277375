//! Random sampling: exact values from a Python reference of Threefry-2x32-20 (sample key
//! = bits 0 and 1 of the key; `split` takes bits from counter 2), and statistics.

use lazuli::{Array, DType, Error, random};

fn stats(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

#[test]
fn keys_and_split() {
    assert_eq!(random::key(42).unwrap().to_vec::<u32>().unwrap(), vec![0, 42]);
    assert_eq!(random::key(0x1_0000_0002).unwrap().to_vec::<u32>().unwrap(), vec![1, 2]);
    let ks = random::split(&random::key(0).unwrap(), 2).unwrap();
    assert_eq!(ks.shape(), [2, 2]);
    assert_eq!(ks.dtype(), DType::U32);
    assert_eq!(ks.to_vec::<u32>().unwrap(), vec![1688610540, 3098264785, 2892874427, 1447157908]);
    assert_eq!(random::split(&random::key(0).unwrap(), 0).unwrap().shape(), [0, 2]);
    // Errors: wrong dtype, wrong shape.
    let bad = Array::from_slice(&[0i32, 1], &[2]).unwrap();
    assert!(matches!(random::split(&bad, 2), Err(Error::DType { .. })));
    let bad = Array::from_slice(&[0u32, 1, 2], &[3]).unwrap();
    assert!(matches!(random::split(&bad, 2), Err(Error::Shape { .. })));
}

#[test]
fn uniform_values() {
    let k = random::key(7).unwrap();
    let u = random::uniform(&k, &[2, 2], 0.0, 1.0, DType::F32).unwrap();
    assert_eq!(u.shape(), [2, 2]);
    assert_eq!(u.to_vec::<f32>().unwrap(), vec![0.25993294, 0.29802138, 0.9135803, 0.34947026]);
    let u = random::uniform(&k, &[4], -2.0, 3.0, DType::F32).unwrap();
    assert_eq!(u.to_vec::<f32>().unwrap(), vec![-0.70033526, -0.5098932, 2.5679016, -0.2526487]);
    // Same key, same values; different keys, different values.
    let a = random::uniform(&k, &[64], 0.0, 1.0, DType::F32).unwrap().to_vec::<f32>().unwrap();
    let b = random::uniform(&k, &[64], 0.0, 1.0, DType::F32).unwrap().to_vec::<f32>().unwrap();
    let c = random::uniform(&random::key(8).unwrap(), &[64], 0.0, 1.0, DType::F32).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
    // Split keys differ from each other and from the parent.
    let ks = random::split(&k, 2).unwrap();
    let k0 = ks.slice(&[0.into()]).unwrap();
    let k1 = ks.slice(&[1.into()]).unwrap();
    let d = random::uniform(&k0, &[64], 0.0, 1.0, DType::F32).unwrap().to_vec::<f32>().unwrap();
    let e = random::uniform(&k1, &[64], 0.0, 1.0, DType::F32).unwrap().to_vec::<f32>().unwrap();
    assert_ne!(a, d);
    assert_ne!(d, e);
}

#[test]
fn uniform_statistics_and_dtypes() {
    let k = random::key(123).unwrap();
    let v: Vec<f64> = random::uniform(&k, &[10_000], 0.0, 1.0, DType::F32)
        .unwrap()
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .map(|&x| x as f64)
        .collect();
    assert!(v.iter().all(|&x| (0.0..1.0).contains(&x)));
    let (mean, std) = stats(&v);
    assert!((mean - 0.5).abs() < 0.02, "mean {mean}");
    assert!((std - (1.0f64 / 12.0).sqrt()).abs() < 0.02, "std {std}");
    // Narrow dtypes never round up to `high`.
    let h = random::uniform(&k, &[10_000], 1.0, 2.0, DType::BF16).unwrap();
    assert_eq!(h.dtype(), DType::BF16);
    let h = h.to_vec::<half::bf16>().unwrap();
    assert!(h.iter().all(|x| (1.0..2.0).contains(&x.to_f64())));
    let h = random::uniform(&k, &[10_000], -1.0, 0.0, DType::F16).unwrap().to_vec::<half::f16>().unwrap();
    assert!(h.iter().all(|x| (-1.0..0.0).contains(&x.to_f64())));
    let d = random::uniform(&k, &[1000], 5.0, 6.0, DType::F64).unwrap().to_vec::<f64>().unwrap();
    assert!(d.iter().all(|x| (5.0..6.0).contains(x)));
    // Errors.
    assert!(matches!(random::uniform(&k, &[2], 0.0, 1.0, DType::I32), Err(Error::DType { .. })));
    assert!(matches!(random::uniform(&k, &[2], 1.0, 1.0, DType::F32), Err(Error::Invalid { .. })));
    assert!(matches!(random::uniform(&k, &[2], 2.0, 1.0, DType::F32), Err(Error::Invalid { .. })));
    assert!(random::uniform(&k, &[2], f64::NAN, 1.0, DType::F32).is_err());
    let bad = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    assert!(matches!(random::uniform(&bad, &[2], 0.0, 1.0, DType::F32), Err(Error::DType { .. })));
}

#[test]
fn normal_values_and_statistics() {
    let k = random::key(7).unwrap();
    let z = random::normal(&k, &[3], 0.0, 1.0, DType::F32).unwrap().to_vec::<f32>().unwrap();
    let expect = [1.405434900647757, -0.9104071474519454, -0.8481836633003764];
    for (a, b) in z.iter().zip(expect) {
        assert!((*a as f64 - b).abs() < 1e-5, "{z:?}");
    }
    let z = random::normal(&k, &[3], 1.0, 2.0, DType::F32).unwrap().to_vec::<f32>().unwrap();
    let expect = [3.810869801295514, -0.8208142949038908, -0.6963673266007528];
    for (a, b) in z.iter().zip(expect) {
        assert!((*a as f64 - b).abs() < 1e-5, "{z:?}");
    }
    let v: Vec<f64> =
        random::normal(&random::key(5).unwrap(), &[100, 100], 0.0, 1.0, DType::F64).unwrap().to_vec::<f64>().unwrap();
    let (mean, std) = stats(&v);
    assert!(mean.abs() < 0.05, "mean {mean}");
    assert!((std - 1.0).abs() < 0.05, "std {std}");
    let v: Vec<f64> = random::normal(&random::key(6).unwrap(), &[10_001], 3.0, 0.5, DType::F32)
        .unwrap()
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .map(|&x| x as f64)
        .collect();
    let (mean, std) = stats(&v);
    assert!((mean - 3.0).abs() < 0.03, "mean {mean}");
    assert!((std - 0.5).abs() < 0.03, "std {std}");
    assert_eq!(random::normal(&k, &[0, 3], 0.0, 1.0, DType::F32).unwrap().shape(), [0, 3]);
    assert!(matches!(random::normal(&k, &[2], 0.0, -1.0, DType::F32), Err(Error::Invalid { .. })));
    assert!(matches!(random::normal(&k, &[2], 0.0, 1.0, DType::U32), Err(Error::DType { .. })));
}

#[test]
fn randint_values_and_range() {
    let k = random::key(7).unwrap();
    let r = random::randint(&k, &[6], -3, 7, DType::I32).unwrap();
    assert_eq!(r.to_vec::<i32>().unwrap(), vec![3, 1, 6, 2, 6, 2]);
    let r = random::randint(&k, &[6], -3, 7, DType::I64).unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![3, 1, 6, 2, 6, 2]);
    let v = random::randint(&random::key(1).unwrap(), &[10_000], 5, 15, DType::U32).unwrap().to_vec::<u32>().unwrap();
    assert!(v.iter().all(|x| (5..15).contains(x)));
    for want in 5..15 {
        assert!(v.contains(&want), "{want} never drawn");
    }
    // The full int32 range (wrapping arithmetic) stays in range and covers both signs.
    let w = random::randint(&k, &[1000], i32::MIN as i64, i32::MAX as i64 + 1, DType::I32).unwrap();
    let w = w.to_vec::<i32>().unwrap();
    assert!(w.iter().any(|&x| x < 0) && w.iter().any(|&x| x > 0));
    let w = random::randint(&k, &[1000], -5_000_000_000, -4_000_000_000, DType::I64).unwrap();
    assert!(w.to_vec::<i64>().unwrap().iter().all(|x| (-5_000_000_000..-4_000_000_000).contains(x)));
    // Errors.
    assert!(matches!(random::randint(&k, &[2], 3, 3, DType::I32), Err(Error::Invalid { .. })));
    assert!(matches!(random::randint(&k, &[2], -1, 3, DType::U32), Err(Error::Invalid { .. })));
    assert!(matches!(random::randint(&k, &[2], 0, 1 << 40, DType::I32), Err(Error::Invalid { .. })));
    assert!(matches!(random::randint(&k, &[2], 0, 1 << 40, DType::I64), Err(Error::Invalid { .. })));
    assert!(matches!(random::randint(&k, &[2], 0, 3, DType::F32), Err(Error::DType { .. })));
}

#[test]
fn bernoulli_values_and_rate() {
    let k = random::key(7).unwrap();
    let b = random::bernoulli(&k, 0.5, &[8]).unwrap();
    assert_eq!(b.dtype(), DType::Bool);
    assert_eq!(b.to_vec::<bool>().unwrap(), vec![true, true, false, true, true, false, true, false]);
    let v = random::bernoulli(&random::key(9).unwrap(), 0.3, &[10_000]).unwrap().to_vec::<bool>().unwrap();
    let rate = v.iter().filter(|&&x| x).count() as f64 / 1e4;
    assert!((rate - 0.3).abs() < 0.03, "rate {rate}");
    assert!(random::bernoulli(&k, 0.0, &[1000]).unwrap().to_vec::<bool>().unwrap().iter().all(|&x| !x));
    assert!(random::bernoulli(&k, 1.0, &[1000]).unwrap().to_vec::<bool>().unwrap().iter().all(|&x| x));
    assert!(matches!(random::bernoulli(&k, 1.5, &[2]), Err(Error::Invalid { .. })));
    assert!(matches!(random::bernoulli(&k, -0.1, &[2]), Err(Error::Invalid { .. })));
    assert!(random::bernoulli(&k, f64::NAN, &[2]).is_err());
}
