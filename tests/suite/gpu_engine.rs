//! The GPU engine's bookkeeping, counted rather than timed: host data read by many GPU
//! ops is uploaded once; the values of long chains stay exact.

use crate::common;

use common::{gpu_available, on};
use lazuli::{Array, Device};

/// A host constant read by every op of a long GPU chain is uploaded once, not once per
/// op (issue 12, item 8: the per-op upload made such chains quadratic on lavapipe).
#[test]
fn host_constant_is_uploaded_once() {
    if !gpu_available() {
        return;
    }
    let gpu = Device::gpu(0);
    // Made outside any scope: the constant lives on the CPU, the chain runs on the GPU.
    let c = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let x = Array::from_slice(&[0.5f32, 0.25, 0.125, 1.0], &[4]).unwrap().to_device(gpu).unwrap();
    x.eval().unwrap();
    let before = lazuli::backend::gpu::uploads();
    let mut y = x.clone();
    for _ in 0..200 {
        // y = y * c - c, then + c back: y is unchanged in exact arithmetic and in f32
        // (the values are small dyadic rationals).
        y = on(gpu, || y.mul(&c)?.sub(&c)?.add(&c)?.div(&c)).unwrap();
    }
    assert_eq!(y.device(), gpu);
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![0.5, 0.25, 0.125, 1.0]);
    let uploads = lazuli::backend::gpu::uploads() - before;
    // One upload of c; other tests in this binary may upload concurrently, but not 800 times.
    assert!(uploads < 100, "{uploads} uploads for a chain of 800 ops reading one host constant");
    // The constant still reads back from the host, unchanged.
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
}

/// A long chain of tiny ops (many batches, the parameter arena refilled each submit) gives
/// exactly the values of the CPU, and a read-back in the middle sees the work before it.
#[test]
fn long_tiny_chain_matches_cpu() {
    let mut want = Vec::new();
    for d in common::devices() {
        let got = on(d, || {
            let mut y = Array::from_slice(&[1.0f32, -2.0, 3.5, 0.0, 7.0], &[5])?;
            let mut mid = Vec::new();
            for i in 0..300 {
                y = y.mul(1.5)?.sub(&y.mul(0.5)?)?.add(1.0)?.maximum(0.0)?;
                if i == 150 {
                    mid = y.to_vec::<f32>()?;
                }
            }
            Ok((mid, y.sum(&[0], false)?.item::<f32>()?))
        })
        .unwrap();
        want.push(got);
    }
    // y -> max(y + 1, 0): the values after 151 steps.
    assert_eq!(want[0].0, vec![152.0, 150.0, 154.5, 151.0, 158.0]);
    for w in &want {
        assert_eq!(w, &want[0]);
    }
}
