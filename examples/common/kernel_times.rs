//! The GPU time of a benchmark row's kernels, with `LAZULI_GPU_TIMING=1` (see
//! `lazuli::backend::gpu::kernel_times`): shared by the benchmark examples, which print it
//! beside each row so that a missed ratio can be split into kernel time and the rest.

use lazuli::{DeviceKind, Result, Stream};

/// What the kernels of one call took, in seconds per call.
pub struct PerCall {
    /// The kernels' durations, summed.
    pub kernels: f64,
    /// From each batch's first kernel start to its last kernel end, summed.
    pub busy: f64,
    /// Between batches, summed (the GPU's idle time while the calls ran).
    pub idle: f64,
    /// Each kernel: name, launches per call, microseconds per launch.
    pub list: String,
}

/// Runs `calls` calls of `f` on `s` with the kernel timer reset first. `None` on the CPU
/// or with timing off.
pub fn measure(s: &Stream, calls: usize, mut f: impl FnMut() -> Result<()>) -> Result<Option<PerCall>> {
    if s.device.kind != DeviceKind::Gpu || lazuli::backend::gpu::kernel_times()?.is_none() {
        return Ok(None);
    }
    s.synchronize()?;
    lazuli::backend::gpu::reset_kernel_times();
    for _ in 0..calls {
        f()?;
    }
    s.synchronize()?;
    let Some(t) = lazuli::backend::gpu::kernel_times()? else { return Ok(None) };
    let n = calls.max(1) as f64;
    let list = t
        .kernels
        .iter()
        .map(|k| {
            let each = k.total.as_secs_f64() / k.launches.max(1) as f64;
            format!("{} x{:.2} {:.1} us", k.name, k.launches as f64 / n, each * 1e6)
        })
        .collect::<Vec<_>>()
        .join("; ");
    let kernels: f64 = t.kernels.iter().map(|k| k.total.as_secs_f64()).sum();
    Ok(Some(PerCall { kernels: kernels / n, busy: t.busy.as_secs_f64() / n, idle: t.idle.as_secs_f64() / n, list }))
}
