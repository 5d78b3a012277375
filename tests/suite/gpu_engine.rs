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
    let before = lazuli::backend::gpu::uploads_here();
    let mut y = x.clone();
    for _ in 0..200 {
        // y = y * c - c, then + c back: y is unchanged in exact arithmetic and in f32
        // (the values are small dyadic rationals).
        y = on(gpu, || y.mul(&c)?.sub(&c)?.add(&c)?.div(&c)).unwrap();
    }
    assert_eq!(y.device(), gpu);
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![0.5, 0.25, 0.125, 1.0]);
    let uploads = lazuli::backend::gpu::uploads_here() - before;
    // This thread's uploads only: other tests in this binary upload concurrently.
    assert_eq!(uploads, 1, "{uploads} uploads for a chain of 800 ops reading one host constant");
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

/// Column reductions with too few outputs to fill a GPU are cut into slices and reduced
/// twice: the sums stay right (f32 against f64, f16 accumulated in f32, i32 exact).
#[test]
fn few_wide_columns_reduce_right() {
    for d in common::devices() {
        on(d, || {
            let (rows, cols) = (4096usize, 48usize);
            let x: Vec<f32> = (0..rows * cols).map(|i| ((i * 7919) % 1000) as f32 / 250.0 - 2.0).collect();
            let a = Array::from_slice(&x, &[rows, cols])?;
            let got = a.sum(&[0], false)?.to_vec::<f32>()?;
            let ints = a.mul(250.0)?.astype(lazuli::DType::I32)?.sum(&[0], false)?.to_vec::<i32>()?;
            let half = a.astype(lazuli::DType::F16)?.add(96.0)?.mean(&[0], false)?.to_vec::<half::f16>()?;
            for c in 0..cols {
                let want: f64 = (0..rows).map(|r| x[r * cols + c] as f64).sum();
                assert!((got[c] as f64 - want).abs() <= 1e-4 * (1.0 + want.abs()), "{d} col {c}: {} vs {want}", got[c]);
                let iw: i64 = (0..rows).map(|r| (x[r * cols + c] * 250.0) as i32 as i64).sum();
                assert_eq!(ints[c] as i64, iw, "{d} col {c}");
                let hw = 96.0 + want / rows as f64;
                assert!((half[c].to_f64() - hw).abs() <= 0.1, "{d} col {c}: {} vs {hw}", half[c]);
            }
            lazuli::Result::Ok(())
        })
        .unwrap();
    }
}

/// Large host arrays made under a GPU stream go to the device at once, chunk by chunk
/// through reused staging buffers: every element arrives, odd tails included, and reads
/// back in one copy.
#[test]
fn large_uploads_round_trip() {
    if !gpu_available() {
        return;
    }
    let gpu = Device::gpu(0);
    // 36 MB of f32 (two staging chunks) and 32 MiB + 2 bytes of f16 (a 2-byte tail).
    let n = 9 << 20;
    let x: Vec<f32> = (0..n).map(|i| (i % 65_521) as f32 - 30_000.0).collect();
    let h: Vec<half::f16> = (0..(16 << 20) + 1).map(|i| half::f16::from_f32((i % 2048) as f32)).collect();
    on(gpu, || {
        let a = Array::from_slice(&x, &[n])?;
        assert_eq!(a.device(), gpu);
        assert_eq!(a.to_vec::<f32>()?, x, "the upload, read back");
        let doubled = a.mul(2.0)?.to_vec::<f32>()?;
        assert!(doubled.iter().zip(&x).all(|(d, v)| *d == 2.0 * v), "a kernel reads every chunk");
        if lazuli::backend::gpu::adapter_summary()?.contains("f16") {
            let b = Array::from_vec(h.clone(), &[h.len()])?;
            assert_eq!(b.to_vec::<half::f16>()?, h, "f16 with a 2-byte tail");
        }
        lazuli::Result::Ok(())
    })
    .unwrap();
}

/// The new read-back and upload paths refuse what does not fit: `download_into` a slice
/// of the wrong length, and `from_slice` of the wrong element count under a GPU stream,
/// are `Err`s on every device, and the right length reads the bytes back.
#[test]
fn transfers_refuse_wrong_sizes() {
    for d in common::devices() {
        let backend = lazuli::backend::backend_for(d).unwrap();
        let stream = lazuli::default_stream(d).unwrap();
        let bytes: Vec<u8> = [1.5f32, -2.0, 3.25, 4.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        let buf = backend.upload(&stream, lazuli::DType::F32, &bytes).unwrap();
        let mut out = vec![0u8; 16];
        backend.download_into(&buf, &mut out).unwrap();
        assert_eq!(out, bytes, "{d}");
        let mut short = vec![0u8; 15];
        assert!(backend.download_into(&buf, &mut short).is_err(), "{d}: a 15-byte slice for 16 bytes");
        let err = on(d, || Array::from_slice(&[1.0f32, 2.0, 3.0], &[2, 2])).unwrap_err();
        assert!(matches!(err, lazuli::Error::Shape { .. }), "{d}: {err}");
        assert!(err.to_string().contains("3 elements cannot fill shape [2, 2]"), "{d}: {err}");
    }
}
