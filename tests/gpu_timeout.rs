//! `LAZULI_GPU_TIMEOUT_S` bounds every wait: once a wait has timed out the device is
//! treated as lost, so the next op fails at once instead of blocking behind the stuck
//! work inside `queue.submit` (13 s on lavapipe with a 1 s timeout, holding the locks
//! every GPU thread needs). The timeout is read once per process: its own test binary.

#[path = "suite/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use lazuli::{DType, Device, Error};

#[test]
fn the_op_after_a_timeout_fails_fast() {
    // SAFETY: set before any other thread of this process reads the environment (the
    // only test here, and it runs before the GPU is touched).
    unsafe { std::env::set_var("LAZULI_GPU_TIMEOUT_S", "1") };
    if !common::gpu_available() {
        return;
    }
    let gpu = lazuli::default_stream(Device::gpu(0)).unwrap();
    let key = lazuli::random::key(0).unwrap();
    // Seconds of work on a software rasteriser; a real GPU may finish it in time.
    let slow = lazuli::with_stream(&gpu, || {
        let x = lazuli::random::normal(&key, &[3072, 3072], 0.0, 0.02, DType::F32)?;
        let mut y = x.clone();
        for _ in 0..4 {
            y = y.matmul(&x)?;
        }
        y.sum(&[], false)
    })
    .unwrap();
    // Recording and submitting first, outside the measured wait: lavapipe runs submitted
    // work during `queue.submit` (perf shows the recording thread running shader code), so
    // on the 2-core machine this took 2.7-2.8 s of the test's 3.8-3.9 s, pipeline builds
    // included, and more on a slower machine. None of it is the bounded wait under test,
    // which then takes the 1 s timeout.
    let recording = Instant::now();
    let evaluated = slow.eval();
    eprintln!("recording and submitting took {:?}", recording.elapsed());
    let start = Instant::now();
    let first = evaluated.and_then(|()| slow.item::<f32>());
    let waited = start.elapsed();
    eprintln!("the read waited {waited:?}");
    match first {
        Ok(_) => eprintln!("the GPU finished in {waited:?}, within the 1 s timeout: nothing to check"),
        Err(e) => {
            assert!(matches!(e.root_cause(), Error::Gpu(m) if m.contains("did not finish")), "{e}");
            assert!(waited < Duration::from_secs(5), "the wait itself is bounded: {waited:?}");
            let next = Instant::now();
            let a = lazuli::Array::from_slice(&[1.0f32], &[1]).unwrap();
            let e = lazuli::with_stream(&gpu, || a.exp()).unwrap().item::<f32>().unwrap_err();
            assert!(matches!(e.root_cause(), Error::Gpu(m) if m.contains("device lost")), "{e}");
            assert!(next.elapsed() < Duration::from_millis(500), "the next op fails fast: {:?}", next.elapsed());
            // The CPU is unaffected.
            assert_eq!(a.exp().unwrap().item::<f32>().unwrap(), 1f32.exp());
        }
    }
}
