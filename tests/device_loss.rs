//! The GPU device destroyed in the middle of work (through the documented test hook, as a
//! driver reset would): every later GPU call is an `Err(Error::Gpu)` naming the loss,
//! work in flight fails within the timeout, the CPU keeps working, and nothing panics or
//! hangs. The loss is process-wide and irreversible, so this file is its own test binary
//! with a single test.

#[path = "suite/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use lazuli::{Array, DType, Device, Error};

fn is_loss(e: &Error) -> bool {
    matches!(e.root_cause(), Error::Gpu(m) if m.contains("device lost"))
}

#[test]
fn a_destroyed_device_gives_errors_not_panics_or_hangs() {
    if !common::gpu_available() {
        return;
    }
    let gpu = lazuli::default_stream(Device::gpu(0)).unwrap();
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    let done = lazuli::with_stream(&gpu, || a.exp()).unwrap();
    done.eval().unwrap();
    // Work in flight when the device goes: a chain of matmuls, started asynchronously.
    let key = lazuli::random::key(3).unwrap();
    let busy = lazuli::with_stream(&gpu, || {
        let x = lazuli::random::normal(&key, &[256, 256], 0.0, 0.05, DType::F32)?;
        let mut y = x.clone();
        for _ in 0..30 {
            y = y.matmul(&x)?.tanh()?;
        }
        Ok::<_, Error>(y)
    })
    .unwrap();
    lazuli::async_eval(&[&busy]).unwrap();

    let start = Instant::now();
    lazuli::backend::gpu::destroy_device_for_testing().unwrap();

    // The in-flight read: finished before the loss, or an Err naming it.
    match busy.to_vec::<f32>() {
        Ok(v) => assert_eq!(v.len(), 256 * 256),
        Err(e) => assert!(is_loss(&e), "in-flight read: {e}"),
    }
    // New work, reads of evaluated GPU data, uploads and synchronize: Err naming the loss.
    let e = lazuli::with_stream(&gpu, || a.mul(2.0)).unwrap().to_vec::<f32>().unwrap_err();
    assert!(is_loss(&e), "new work: {e}");
    let e = done.to_vec::<f32>().unwrap_err();
    assert!(is_loss(&e), "read of evaluated data: {e}");
    let e = a.to_device(Device::gpu(0)).and_then(|g| g.to_vec::<f32>()).unwrap_err();
    assert!(is_loss(&e), "upload: {e}");
    let e = lazuli::synchronize(&gpu).unwrap_err();
    assert!(is_loss(&e), "synchronize: {e}");
    // Still an Err the second time (no state left half-changed).
    assert!(is_loss(&done.to_vec::<f32>().unwrap_err()));
    assert!(start.elapsed() < Duration::from_secs(60), "bounded: {:?}", start.elapsed());

    // The CPU keeps working (data the GPU held is gone with it).
    let c = a.mul(2.0).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(c, vec![2.0, 4.0, 6.0]);
}
