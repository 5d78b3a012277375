//! `async_eval` runs on a small fixed pool: 10,000 calls leave a handful of threads.

use lazuli::{Array, DType};

/// Threads of this process whose name starts with `prefix` (Linux: /proc/self/task).
#[cfg(target_os = "linux")]
fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with(prefix))
        .count()
}

#[test]
fn ten_thousand_calls_use_a_few_threads() {
    let x = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let mut outs = Vec::new();
    for i in 0..10_000 {
        let y = x.mul(i as f64).unwrap().sum(&[], false).unwrap();
        lazuli::async_eval(&[&y]).unwrap();
        if i % 1000 == 0 {
            outs.push((i, y));
        }
    }
    #[cfg(target_os = "linux")]
    {
        // The comm name is cut at 15 bytes: "lazuli-async-ev".
        let n = threads_named("lazuli-async");
        assert!((1..=4).contains(&n), "{n} async_eval threads");
    }
    for (i, y) in outs {
        assert_eq!(y.item::<f32>().unwrap(), 3.0 * i as f32);
    }
    let z = lazuli::zeros(&[3], DType::I32).unwrap();
    lazuli::async_eval(&[&z]).unwrap();
    lazuli::synchronize(&z.stream()).unwrap();
    assert!(z.is_evaluated());
}
