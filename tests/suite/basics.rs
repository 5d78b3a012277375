//! The core: laziness, sharing, detaching, deep graphs, threads, streams.

use lazuli::{Array, DType, Device, Error};

#[test]
fn nothing_runs_before_eval_and_shared_nodes_run_once() {
    let _lock = serial();
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    let shared = a.exp().unwrap();
    let b = shared.add(&shared).unwrap();
    let c = shared.mul(&b).unwrap();
    assert!(!shared.is_evaluated() && !b.is_evaluated() && !c.is_evaluated());
    lazuli::eval(&[&c]).unwrap();
    assert!(shared.is_evaluated() && b.is_evaluated() && c.is_evaluated());
    let e = [1f32.exp(), 2f32.exp(), 3f32.exp()];
    let want: Vec<f32> = e.iter().map(|x| x * (x + x)).collect();
    let got = c.to_vec::<f32>().unwrap();
    for (g, w) in got.iter().zip(&want) {
        approx::assert_relative_eq!(g, w, max_relative = 1e-6);
    }
}

#[test]
fn shared_node_runs_once_counted() {
    // Other tests of this binary evaluate on other threads: count this thread's work.
    let _lock = serial();
    let a = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let s = a.exp().unwrap(); // 1 node
    let b = s.add(&s).unwrap(); // 1 node
    let c = s.mul(&b).unwrap(); // 1 node
    let before = lazuli::primitives_run_here();
    lazuli::eval(&[&c, &b, &s]).unwrap();
    assert_eq!(lazuli::primitives_run_here() - before, 3);
    // Evaluating again runs nothing.
    lazuli::eval(&[&c]).unwrap();
    assert_eq!(lazuli::primitives_run_here() - before, 3);
}

fn serial() -> std::sync::MutexGuard<'static, ()> {
    static M: std::sync::Mutex<()> = std::sync::Mutex::new(());
    M.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn million_op_chain_evaluates_and_drops_without_overflow() {
    let _lock = serial();
    // Run on a thread with a small stack to prove nothing recurses per node.
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            let one = Array::scalar(1.0f32).unwrap();
            let mut x = Array::scalar(0.0f32).unwrap();
            for _ in 0..1_000_000 {
                x = x.add(&one).unwrap();
            }
            assert_eq!(x.item::<f32>().unwrap(), 1_000_000.0);

            // And a chain dropped without being evaluated.
            let mut y = Array::scalar(0.0f32).unwrap();
            for _ in 0..1_000_000 {
                y = y.add(&one).unwrap();
            }
            drop(y);
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn evaluated_nodes_detach_from_their_inputs() {
    let _lock = serial();
    let a = Array::from_slice(&[1.0f32; 4], &[4]).unwrap();
    let big = a.add(&a).unwrap();
    let weak_probe = big.clone();
    let c = big.sum(&[], false).unwrap();
    drop(big);
    c.eval().unwrap();
    // `c` no longer holds `big`: only our probe does, and it is evaluated.
    assert!(weak_probe.is_evaluated());
    assert_eq!(c.item::<f32>().unwrap(), 8.0);
}

#[test]
fn async_eval_then_read() {
    let _lock = serial();
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let b = a.matmul(&a).unwrap();
    lazuli::async_eval(&[&b]).unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap(), vec![7.0, 10.0, 15.0, 22.0]);
    lazuli::synchronize(&b.stream()).unwrap();
}

/// Readers that find a node running wait and are woken when it finishes (its runner
/// signals only when a reader waits): threads read an array another thread is still
/// computing, and every read returns.
#[test]
fn readers_of_a_running_node_are_woken() {
    let _lock = serial();
    for _ in 0..20 {
        let a = Array::from_slice(&vec![0.5f32; 256 * 256], &[256, 256]).unwrap();
        let b = a.matmul(&a).unwrap().sum(&[0, 1], false).unwrap();
        lazuli::async_eval(&[&b]).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        for _ in 0..4 {
            let (b, tx) = (b.clone(), tx.clone());
            std::thread::spawn(move || tx.send(b.item::<f32>()));
        }
        for _ in 0..4 {
            let got = rx.recv_timeout(std::time::Duration::from_secs(60)).expect("a reader was never woken");
            // 256 * 256 elements of 256 * 0.25 each: exact in f32.
            assert_eq!(got.unwrap(), 4194304.0);
        }
    }
}

#[test]
fn threads_evaluate_graphs_that_share_inputs() {
    let _lock = serial();
    let base = Array::from_slice(&(0..1000).map(|i| i as f32).collect::<Vec<_>>(), &[1000]).unwrap();
    let shared = base.mul(2.0).unwrap().add(1.0).unwrap();
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let s = shared.clone();
            std::thread::spawn(move || {
                let y = s.mul(t as f32).unwrap().sum(&[], false).unwrap();
                y.item::<f32>().unwrap()
            })
        })
        .collect();
    // sum(2i + 1) for i < 1000 = 1_000_000
    for (t, h) in handles.into_iter().enumerate() {
        assert_eq!(h.join().unwrap(), 1_000_000.0 * t as f32);
    }
}

/// Threads walking one pending graph at once (a chain of diamonds, where a walk meets each
/// node twice): the first walk may number nodes in the nodes themselves while the others
/// keep a table, and every thread gets the right values.
#[test]
fn concurrent_walks_over_shared_diamonds_agree() {
    let _lock = serial();
    for _ in 0..10 {
        let x = Array::from_slice(&[1f32, 2.0, 3.0, 4.0], &[4]).unwrap();
        let mut y = x.add(0.0).unwrap();
        for _ in 0..2000 {
            // y * 0.5 + y * 0.5 is y exactly: a diamond that keeps the values.
            y = y.mul(0.5).unwrap().add(y.mul(0.5).unwrap()).unwrap();
        }
        let start = std::sync::Arc::new(std::sync::Barrier::new(6));
        let handles: Vec<_> = (0..6)
            .map(|t| {
                let (y, start) = (y.clone(), start.clone());
                std::thread::spawn(move || {
                    let z = y.add(t as f32).unwrap();
                    start.wait();
                    z.to_vec::<f32>().unwrap()
                })
            })
            .collect();
        for (t, h) in handles.into_iter().enumerate() {
            let t = t as f32;
            assert_eq!(h.join().unwrap(), vec![1.0 + t, 2.0 + t, 3.0 + t, 4.0 + t]);
        }
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    }
}

#[test]
fn arrays_are_send_and_sync() {
    let _lock = serial();
    fn check<T: Send + Sync + Clone>() {}
    check::<Array>();
}

#[test]
fn with_stream_records_the_stream_and_nests() {
    let _lock = serial();
    let s1 = lazuli::new_stream(Device::cpu()).unwrap();
    let s2 = lazuli::new_stream(Device::cpu()).unwrap();
    let a = Array::from_slice(&[1i32, 2], &[2]).unwrap();
    let (b, c, d) = lazuli::with_stream(&s1, || {
        let b = a.add(1).unwrap();
        let c = lazuli::with_stream(&s2, || a.add(2).unwrap());
        let d = a.add(3).unwrap();
        (b, c, d)
    });
    assert_eq!((b.stream(), c.stream(), d.stream()), (s1, s2, s1));
    assert_eq!(d.to_vec::<i32>().unwrap(), vec![4, 5]);
    assert_eq!(a.add(0).unwrap().stream(), lazuli::default_stream(lazuli::default_device()).unwrap());
}

#[test]
fn closed_stream_is_refused() {
    let _lock = serial();
    let s = lazuli::new_stream(Device::cpu()).unwrap();
    let a = Array::from_slice(&[1.0f32], &[1]).unwrap();
    let pending = lazuli::with_stream(&s, || a.exp()).unwrap();
    lazuli::close_stream(&s).unwrap();
    // Built before the close, evaluated after: refused, not run.
    assert!(matches!(pending.eval(), Err(Error::StreamClosed { .. })));
    assert!(matches!(lazuli::with_stream(&s, || a.exp()), Err(Error::StreamClosed { .. })));
    assert!(matches!(lazuli::synchronize(&s), Err(Error::StreamClosed { .. })));
}

#[test]
fn reads_check_the_dtype_and_size() {
    let _lock = serial();
    let a = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    assert!(matches!(a.to_vec::<i32>(), Err(Error::DType { .. })));
    assert!(matches!(a.item::<f32>(), Err(Error::Shape { .. })));
    assert!(matches!(Array::from_slice(&[1.0f32; 3], &[2, 2]), Err(Error::Shape { .. })));
    assert_eq!(a.astype(DType::I32).unwrap().to_vec::<i32>().unwrap(), vec![1, 2]);
}

#[test]
fn unknown_devices_are_errors() {
    let _lock = serial();
    assert!(lazuli::new_stream(Device::gpu(7)).is_err());
    assert!(lazuli::new_stream(Device { kind: lazuli::DeviceKind::Custom(999), index: 0 }).is_err());
}

#[test]
fn failed_evaluation_reports_on_every_read() {
    let _lock = serial();
    // A stream closed under a pending node: the failure sticks to the node.
    let s = lazuli::new_stream(Device::cpu()).unwrap();
    let a = Array::from_slice(&[1.0f32], &[1]).unwrap();
    let b = lazuli::with_stream(&s, || a.exp()).unwrap();
    lazuli::close_stream(&s).unwrap();
    let c = b.add(1.0).unwrap();
    let d = c.mul(2.0).unwrap();
    assert!(c.eval().is_err());
    assert!(c.to_vec::<f32>().is_err());
    // The failed node reports its own cause; consumers name the op that failed and keep
    // that cause, without nesting one level per node.
    assert!(matches!(b.eval(), Err(Error::StreamClosed { .. })));
    let err = d.eval().unwrap_err();
    match &err {
        Error::Eval { op, cause } => {
            assert_eq!(*op, "exp");
            assert!(matches!(**cause, Error::StreamClosed { .. }), "{cause}");
        }
        other => panic!("expected Eval, got {other:?}"),
    }
    assert!(matches!(err.root_cause(), Error::StreamClosed { .. }));
    assert!(std::error::Error::source(&err).is_some());
}

/// A kernel that fails by panicking (here: a view whose element count fits but whose
/// bytes do not) leaves its node failed, for this read and every later one, instead of
/// leaving it running forever.
#[test]
fn a_panicking_kernel_fails_its_node_for_good() {
    let x = lazuli::ones(&[1], DType::F32).unwrap();
    let Ok(s) = x.broadcast_to(&[1 << 61, 4]).and_then(|b| b.sum(&[], false)) else {
        return; // refused when built: as good
    };
    let first = s.eval();
    assert!(first.is_err());
    assert!(s.eval().is_err(), "the second read fails too, at once");
    let y = s.add(1.0).unwrap();
    assert!(y.eval().is_err(), "and so does what depends on it");
}
