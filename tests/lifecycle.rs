//! Generation-tagged streams: MLX's hole (a stream taken before shutdown, used after it)
//! must be an `Err`, never a crash. `shutdown` is process-wide, so this file is its own
//! test binary and its tests take a lock.

use lazuli::{Array, Device, Error};

fn serial() -> std::sync::MutexGuard<'static, ()> {
    static M: std::sync::Mutex<()> = std::sync::Mutex::new(());
    M.lock().unwrap_or_else(|e| e.into_inner())
}

fn devices() -> Vec<Device> {
    let mut d = vec![Device::cpu()];
    if lazuli::new_stream(Device::gpu(0)).is_ok() {
        d.push(Device::gpu(0));
    }
    d
}

#[test]
fn a_stream_taken_before_shutdown_is_refused_after_it() {
    let _l = serial();
    for dev in devices() {
        let old = lazuli::default_stream(dev).unwrap();
        let a = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
        let built_before = lazuli::with_stream(&old, || a.exp()).unwrap();
        lazuli::shutdown().unwrap();

        // Building on it, evaluating what was built on it, synchronizing it: all Err.
        assert!(matches!(lazuli::with_stream(&old, || a.exp()), Err(Error::StreamClosed { .. })), "{dev}");
        assert!(matches!(built_before.eval(), Err(Error::StreamClosed { .. })), "{dev}");
        assert!(matches!(lazuli::synchronize(&old), Err(Error::StreamClosed { .. })), "{dev}");
        assert!(old.check().is_err());

        // A fresh stream works, and the default stream has a new generation.
        let fresh = lazuli::default_stream(dev).unwrap();
        assert_ne!(fresh.generation, old.generation);
        let b = lazuli::with_stream(&fresh, || a.mul(3.0)).unwrap();
        assert_eq!(b.to_vec::<f32>().unwrap(), vec![3.0, 6.0]);
    }
}

/// One rule on every device: data evaluated before `shutdown()` stays readable and can
/// feed new work on fresh streams; only unevaluated work on the old streams fails.
#[test]
fn evaluated_data_outlives_shutdown_on_every_device() {
    let _l = serial();
    for dev in devices() {
        let old = lazuli::default_stream(dev).unwrap();
        let a = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
        let done = lazuli::with_stream(&old, || a.mul(10.0)).unwrap();
        done.eval().unwrap();
        let pending = lazuli::with_stream(&old, || done.add(1.0)).unwrap();
        lazuli::shutdown().unwrap();

        assert_eq!(done.to_vec::<f32>().unwrap(), vec![10.0, 20.0], "{dev}: read after shutdown");
        let fresh = lazuli::default_stream(dev).unwrap();
        let next = lazuli::with_stream(&fresh, || done.add(1.0)).unwrap();
        assert_eq!(next.to_vec::<f32>().unwrap(), vec![11.0, 21.0], "{dev}: input after shutdown");
        assert!(matches!(pending.eval(), Err(Error::StreamClosed { .. })), "{dev}: unevaluated work");
    }
}

#[test]
fn async_work_in_flight_at_shutdown_finishes_or_fails_cleanly() {
    let _l = serial();
    for dev in devices() {
        let s = lazuli::new_stream(dev).unwrap();
        let key = lazuli::random::key(1).unwrap();
        let x = lazuli::with_stream(&s, || {
            let x = lazuli::random::normal(&key, &[128, 128], 0.0, 1.0, lazuli::DType::F32)?;
            let mut y = x.clone();
            for _ in 0..20 {
                y = y.matmul(&x)?.tanh()?;
            }
            Ok::<_, Error>(y)
        })
        .unwrap();
        lazuli::async_eval(&[&x]).unwrap();
        lazuli::shutdown().unwrap();
        // Either it finished before the generation moved, or it reports the closed stream.
        match x.to_vec::<f32>() {
            Ok(v) => assert_eq!(v.len(), 128 * 128),
            Err(e) => assert!(matches!(e.root_cause(), Error::StreamClosed { .. }), "{dev}: {e}"),
        }
    }
}

#[test]
fn closing_one_stream_and_disabling_a_device() {
    let _l = serial();
    let s1 = lazuli::new_stream(Device::cpu()).unwrap();
    let s2 = lazuli::new_stream(Device::cpu()).unwrap();
    lazuli::close_stream(&s1).unwrap();
    assert!(s1.check().is_err());
    assert!(s2.check().is_ok());

    let dev = Device::cpu();
    lazuli::disable_device(dev);
    assert!(s2.check().is_err());
    assert!(matches!(lazuli::new_stream(dev), Err(Error::Device(_))));
    lazuli::enable_device(dev);
    assert!(s2.check().is_err(), "old values stay stale");
    let s3 = lazuli::new_stream(dev).unwrap();
    let a = lazuli::with_stream(&s3, || Array::from_slice(&[2i32], &[1]).unwrap().mul(2)).unwrap();
    assert_eq!(a.to_vec::<i32>().unwrap(), vec![4]);
}
