//! Adversarial calls on the public API: sizes that overflow, allocations no machine can
//! satisfy, and messages a user has to act on. Each must give `Ok` or a clear `Err`,
//! never a panic or an abort (debug builds included: no arithmetic-overflow panics).

use crate::common;

use lazuli::{Array, DType, Error, SliceArg};

/// The error of `r`, which must be an `Err`.
fn err<T: std::fmt::Debug>(what: &str, r: lazuli::Result<T>) -> Error {
    match r {
        Ok(v) => panic!("{what}: expected an error, got {v:?}"),
        Err(e) => e,
    }
}

/// Shapes whose element count or byte size overflows are refused when the node is built.
#[test]
fn shapes_that_overflow_are_refused_when_built() {
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let e = err("reshape", a.reshape(&[(1 << 62) + 1, 4]));
    assert!(matches!(e, Error::Shape { .. }), "{e}");

    let one = Array::scalar(1.0f32).unwrap();
    let e = err("broadcast 2^32 x 2^32", one.broadcast_to(&[1 << 32, 1 << 32]));
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    let e = err("broadcast_to [2^61, 4]", one.broadcast_to(&[1 << 61, 4]));
    assert!(e.to_string().contains("too large"), "{e}");

    let x = lazuli::zeros(&[usize::MAX, 0], DType::F32);
    assert!(x.is_err(), "[MAX, 0] of f32 has more than isize::MAX bytes of non-zero dims");
    let e = err("from_slice", Array::from_slice::<f32>(&[], &[1 << 33, 1 << 31]));
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    let e = err("from_bytes", Array::from_bytes(&[], &[1 << 33, 1 << 31], DType::U32));
    assert!(matches!(e, Error::Shape { .. }), "{e}");

    let e = err("random.split MAX", lazuli::random::split(&lazuli::random::key(0).unwrap(), usize::MAX));
    assert!(matches!(e, Error::Shape { .. }), "{e}");

    let e = err("tile", a.tile(&[usize::MAX]));
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    let e = err("repeat", a.repeat(usize::MAX / 2, None));
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    let e = err("pad", a.pad(&[(usize::MAX, 1)], 0.0));
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    let e = err("pad", a.pad(&[(1 << 61, 0)], 0.0));
    assert!(matches!(e, Error::Shape { .. }), "{e}");
}

/// Empty operands of matmul with huge outer dimensions: the output would not fit.
#[test]
fn matmul_of_huge_empty_operands() {
    // Zero-size dims are fine only while the other dims stay addressable.
    let a = lazuli::zeros(&[1 << 20, 0], DType::F32).unwrap();
    let b = lazuli::zeros(&[0, 1 << 20], DType::F32).unwrap();
    let e = err("matmul [2^20,0]@[0,2^20]", a.matmul(&b).and_then(|c| c.sum(&[], false)).and_then(|s| s.item::<f32>()));
    // 2^40 f32 outputs = 4 TiB of zeros: the allocation is refused, not aborted.
    assert!(matches!(e.root_cause(), Error::OutOfMemory { .. }), "{e}");
}

/// Arrays that pass every check but cannot be allocated give `OutOfMemory`, naming sizes.
#[test]
fn allocations_no_machine_has_are_errors() {
    for (what, r) in [
        ("zeros", lazuli::zeros(&[1 << 42], DType::F32)),
        ("linspace", lazuli::linspace(0.0, 1.0, 1 << 42, DType::F32)),
        ("eye", lazuli::eye(1 << 21, None, 0, DType::F32)),
        ("random.split", lazuli::random::split(&lazuli::random::key(0).unwrap(), 1 << 42)),
        ("broadcast_to", Array::scalar(1.0f32).unwrap().broadcast_to(&[1 << 42])),
        ("tile", Array::scalar(1i32).unwrap().tile(&[1 << 42])),
        ("pad", Array::scalar(1i32).unwrap().reshape(&[1]).unwrap().pad(&[(1 << 42, 0)], 0.0)),
        ("arange", lazuli::arange(0.0, (1u64 << 42) as f64, 1.0, DType::F32)),
    ] {
        // Materialise: sum after a +1 so no view or constant can stay lazy.
        let r = r.and_then(|x| x.add(1)).and_then(|x| x.sum(&[], false)).and_then(|s| s.eval());
        let e = err(what, r);
        let root = e.root_cause();
        assert!(matches!(root, Error::OutOfMemory { .. }), "{what}: {e}");
        assert!(root.to_string().contains("TiB"), "{what}: the message names the size: {root}");
    }
}

/// On the GPU, buffers beyond the adapter's limits are refused with the limit named.
#[test]
fn gpu_allocations_beyond_the_limit_are_errors() {
    if !common::gpu_available() {
        return;
    }
    // A float arange is computed on the host first: the size is checked before that.
    let r = common::on(lazuli::Device::gpu(0), || {
        lazuli::arange(0.0, (1u64 << 36) as f64, 1.0, DType::F32)?.sum(&[], false)?.item::<f32>()
    });
    let e = err("gpu arange 2^36", r);
    assert!(matches!(e.root_cause(), Error::OutOfMemory { limit: Some(_), .. }), "{e}");
    let r = common::on(lazuli::Device::gpu(0), || {
        lazuli::zeros(&[1 << 36], DType::I32)?.add(1)?.sum(&[], false)?.item::<i32>()
    });
    let e = err("gpu zeros 2^36 + 1", r);
    assert!(matches!(e.root_cause(), Error::OutOfMemory { limit: Some(_), .. }), "{e}");
}

/// Splitting an empty axis into more parts than can be held is refused, not aborted.
#[test]
fn split_of_an_empty_array_into_absurdly_many_parts() {
    let a = lazuli::zeros(&[0], DType::F32).unwrap();
    let e = err("split", lazuli::split(&a, 1 << 60, 0));
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
    assert_eq!(lazuli::split(&a, 3, 0).unwrap().len(), 3);
}

/// Messages: numbers short, counts right, the key named as the key.
#[test]
fn error_messages_a_user_can_act_on() {
    let a = Array::from_slice(&[1i32, 2, 3], &[3]).unwrap();
    // A bound outside int32's range is no bound at all: clipping still works.
    assert_eq!(a.clip(Some(-1e300), Some(2.0)).unwrap().to_vec::<i32>().unwrap(), vec![1, 2, 2]);
    assert_eq!(a.clip(Some(2.0), Some(1e300)).unwrap().to_vec::<i32>().unwrap(), vec![2, 2, 3]);
    let e = err("clip", a.clip(Some(1e300), None));
    assert!(e.to_string().len() < 200, "short message: {e}");
    let e = err("add", a.add(i64::MAX));
    assert!(e.to_string().contains("9.223372036854776e18"), "{e}");

    let e = err("pad", a.pad(&[(1, 1), (1, 1)], 0.0));
    assert!(!e.to_string().contains("1 or 1"), "{e}");

    let bad_key = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let e = err("uniform", lazuli::random::uniform(&bad_key, &[2], 0.0, 1.0, DType::F32));
    assert!(e.to_string().contains("the key has dtype float32"), "{e}");
}

/// The unevaluated slice of something absurd never reaches a kernel.
#[test]
fn slices_of_refused_shapes_never_run() {
    let a = Array::from_slice(&[1.0f32; 4], &[4]).unwrap();
    assert!(a.reshape(&[(1 << 62) + 1, 4]).and_then(|r| r.slice(&[SliceArg::from(1..)])).is_err());
}

/// Extreme arguments to every shape-taking call: each returns (`Ok` or `Err`), and what
/// is `Ok` evaluates or fails cleanly. Runs in debug builds, where an arithmetic overflow
/// would panic.
#[test]
fn extreme_arguments_never_panic() {
    let big = [0usize, 1, 2, 1 << 31, 1 << 32, 1 << 62, usize::MAX / 2, usize::MAX];
    let ibig = [0isize, 1, -1, 2, -2, isize::MAX, isize::MIN, isize::MIN + 1, 1 << 40, -(1 << 40)];
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let e = lazuli::zeros(&[0, 3], DType::F32).unwrap();
    let key = lazuli::random::key(0).unwrap();
    let mut results: Vec<(String, lazuli::Result<Array>)> = Vec::new();
    for x in [&a, &e] {
        for &n in &big {
            results.push((format!("repeat {n}"), x.repeat(n, Some(0))));
            results.push((format!("tile {n}"), x.tile(&[n, 1])));
            results.push((format!("pad {n}"), x.pad(&[(n, 0), (0, 1)], 1.0)));
            results.push((format!("broadcast {n}"), x.broadcast_to(&[n, 2, 3])));
            results.push((format!("split_at {n}"), lazuli::split_at(x, &[n, 1], 0).map(|v| v[0].clone())));
            results.push((format!("one_hot {n}"), lazuli::one_hot(&x.astype(DType::I32).unwrap(), n, DType::F32)));
        }
        for &i in &ibig {
            results.push((format!("slice {i}"), x.slice(&[lazuli::SliceArg::new(Some(i), Some(i.wrapping_neg()), 1)])));
            results.push((format!("slice step {i}"), x.slice(&[lazuli::SliceArg::new(None, None, i)])));
            results.push((format!("slice start {i} step -1"), x.slice(&[lazuli::SliceArg::new(Some(i), None, -1)])));
            results.push((format!("reshape {i}"), x.reshape(&[i, -1])));
            results.push((format!("expand_dims {i}"), x.expand_dims(&[i])));
            results.push((format!("triu {i}"), x.triu(i)));
            results.push((format!("eye k {i}"), lazuli::eye(3, Some(4), i, DType::F32)));
            results.push((format!("cumsum {i}"), x.cumsum(i, false)));
            results.push((format!("take {i}"), x.take(&Array::from_slice(&[i as i64], &[1]).unwrap(), Some(1))));
        }
    }
    for &n in &big {
        results.push((format!("linspace {n}"), lazuli::linspace(0.0, 1.0, n, DType::F32)));
        results.push((format!("eye {n}"), lazuli::eye(n, Some(n), 0, DType::F32)));
        results.push((format!("random.split {n}"), lazuli::random::split(&key, n)));
        results.push((format!("uniform {n}"), lazuli::random::uniform(&key, &[n, n], 0.0, 1.0, DType::F32)));
        results.push((format!("randint {n}"), lazuli::random::randint(&key, &[2], 0, n as i64, DType::I32)));
        results.push((format!("zeros {n}"), lazuli::zeros(&[n, 3], DType::F16)));
    }
    for (lo, hi, step) in [(0.0, 1e300, 1.0), (-1e18, 1e18, 1e-3), (0.0, 1.0, 1e-300), (0.0, f64::MAX, f64::MAX / 4.0)]
    {
        results.push((format!("arange {lo} {hi} {step}"), lazuli::arange(lo, hi, step, DType::F32)));
    }
    for (what, r) in results {
        // Evaluate what was accepted and small enough for a CI machine (the refused sizes
        // are checked above): a clean result or a clean error, never a panic.
        if let Ok(x) = r.map_err(|e| assert!(!e.to_string().is_empty())) {
            if x.size() > 1 << 24 {
                continue;
            }
            if std::env::var("ABUSE_TRACE").is_ok() {
                eprintln!("{what}: {:?}", x.shape());
            }
            let _ = x.sum(&[], false).and_then(|s| s.eval()).map_err(|e| assert!(!e.to_string().is_empty(), "{what}"));
        }
    }
}
