//! The GPU kernel timer (`LAZULI_GPU_TIMING=1`): kernels are named and counted, their
//! times are positive, results are unchanged, and a reset forgets them. The variable is
//! read once, when the device is made: its own test binary.

#[path = "suite/common/mod.rs"]
mod common;

use lazuli::{Array, Device};

#[test]
fn kernels_are_timed_by_name() {
    // SAFETY: set before any thread of this process reads the environment (the only test
    // here, before the GPU starts).
    unsafe { std::env::set_var("LAZULI_GPU_TIMING", "1") };
    if !common::gpu_available() {
        return;
    }
    let s = lazuli::default_stream(Device::gpu(0)).unwrap();
    let Some(_) = lazuli::backend::gpu::kernel_times().unwrap() else {
        // Not a silent skip: a required GPU without timestamp queries fails here.
        let msg = "kernel timing: this adapter offers no timestamp queries";
        assert!(std::env::var("LAZULI_REQUIRE_GPU").is_err(), "{msg}");
        eprintln!("{msg}; not tested");
        return;
    };
    lazuli::with_stream(&s, || {
        let x = Array::from_slice(&[1f32, -2.0, 3.0, 0.5], &[2, 2])?.to_device(Device::gpu(0))?;
        lazuli::synchronize(&s)?;
        lazuli::backend::gpu::reset_kernel_times();
        // Three evals: a fused elementwise chain, a matmul, a sum.
        let y = (&x * 2.0)?.add(1.0)?.exp()?;
        for (got, want) in y.to_vec::<f32>()?.iter().zip([3f64, -3.0, 7.0, 2.0].map(f64::exp)) {
            assert!((f64::from(*got) - want).abs() <= 1e-6 * want, "{got} against {want}");
        }
        for _ in 0..2 {
            let m = x.matmul(&x)?;
            assert_eq!(m.to_vec::<f32>()?, [-5f32, -3.0, 4.5, -5.75]);
        }
        assert_eq!(x.sum(&[0, 1], false)?.item::<f32>()?, 2.5);
        lazuli::synchronize(&s)?;
        let t = lazuli::backend::gpu::kernel_times()?.expect("timing stays on");
        let launches: u64 = t.kernels.iter().map(|k| k.launches).sum();
        assert!(launches >= 4, "at least one kernel per eval: {t:?}");
        assert!(t.kernels.iter().any(|k| k.name.starts_with("fused#")), "{t:?}");
        let mm = t.kernels.iter().find(|k| k.name.starts_with("matmul")).unwrap_or_else(|| panic!("{t:?}"));
        assert_eq!(mm.launches, 2, "{t:?}");
        assert!(t.kernels.iter().all(|k| !k.name.is_empty() && k.name != "(unnamed)"), "{t:?}");
        assert!(t.submits >= 4 && t.busy > std::time::Duration::ZERO, "{t:?}");
        // The read-backs leave the GPU idle between batches.
        assert!(t.idle > std::time::Duration::ZERO, "{t:?}");
        assert!(t.kernels.windows(2).all(|w| w[0].total >= w[1].total), "longest first: {t:?}");
        lazuli::backend::gpu::reset_kernel_times();
        assert_eq!(lazuli::backend::gpu::kernel_times()?, Some(Default::default()));
        Ok::<_, lazuli::Error>(())
    })
    .unwrap();
}
