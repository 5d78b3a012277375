//! The wgpu GPU backend (Vulkan, Metal, DX12).
//!
//! Layout: [`context`](self) holds the leaked wgpu device and queue; buffers come from a
//! size-bucketed pool; pipelines are compiled once and cached; dispatches are batched
//! into command encoders with a bound on submissions in flight; read-backs wait with a
//! timeout. Kernels live in `shaders/`, one WGSL file per family, specialised per dtype
//! by [`shader_source`].
//!
//! # Dtypes
//! - `F32`, `I32`, `U32` run natively; `Bool` is stored as `u32` 0/1 on the device and
//!   converted at upload and download (the host layout is one byte per bool).
//! - `F16` runs where the adapter offers `SHADER_F16` (math runs in f32, results are
//!   rounded to f16; reductions accumulate in f32).
//! - `BF16`, `F64`, `I64`, and `F16` on adapters without `SHADER_F16`, return
//!   [`Error::Unsupported`]: convert with `astype(DType::F32)` first, or use the CPU.
//!
//! Arrays may have any size the adapter's buffer limits allow (larger is an `Err` naming
//! the limit); strided kernels take rank up to 8 after merging axes.
//!
//! # Matmul
//! f32 and f16 run on a tiled SIMT kernel (`shaders/matmul.wgsl`); f16 runs on tensor
//! cores (`shaders/matmul_coop.wgsl`) where the device has cooperative matrices (see
//! [`adapter_summary`]). Transposed operands are read in place by both. A single f32
//! matmul whose tiles would leave multiprocessors idle (under one workgroup per
//! multiprocessor of an H200) and whose K is long splits K into slabs: a batched matmul
//! into partials, then a sum over them.
//!
//! # Environment
//! `WGPU_BACKEND` / `WGPU_ADAPTER_NAME` choose the adapter; `LAZULI_GPU_TIMEOUT_S` bounds
//! every wait on the GPU (default 300 s); `LAZULI_NO_COOP=1` keeps wgpu's experimental
//! cooperative-matrix feature off (f16 matmul then runs on the SIMT kernel);
//! `LAZULI_MATMUL_SPLIT_K=0` turns the K split off (to measure it);
//! `LAZULI_GPU_MAX_WORKGROUPS=n` plans every dispatch as if the adapter allowed at most
//! `n` workgroups per grid dimension (for testing the paths that split large grids);
//! `LAZULI_GPU_TIMING=1` times each kernel on the GPU (see [`kernel_times`]);
//! `LAZULI_SUBMIT_THREADS=n` submits a batch once its kernels have `n` threads (default
//! 2^20; to measure the submit policy).

mod buffer;
mod context;
mod copy;
mod elementwise;
mod encoder;
mod fill;
mod fused;
mod index;
mod kernels;
mod matmul;
mod matmul_coop;
mod params;
mod pipeline;
mod random;
mod readback;
mod reduce;
mod shader;
mod timing;
mod upload;

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

pub(crate) use buffer::GpuBuffer;
pub use shader::{CoopConfig, Kernel, shader_source, shader_variants};

use crate::backend::{Backend, Buffer, ExitPolicy, Input};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::primitive::{Meta, Primitive};
use crate::stream::Stream;

/// The GPU backend for adapter `index`. Only `gpu(0)` exists; the device is set up on
/// the first call (later calls reuse it, or repeat the first failure).
pub fn backend(index: u32) -> Result<Arc<dyn Backend>> {
    if index != 0 {
        return Err(Error::Device(format!("gpu({index}): only gpu(0) is supported (one adapter per process)")));
    }
    context::context()?;
    started().ok_or_else(|| Error::Internal("gpu(0) has a context but no backend".into()))
}

/// One line about the adapter `gpu(0)` uses: name, backend, type, driver, f16 and
/// cooperative-matrix (tensor-core f16 matmul) support.
/// `Err` when there is none (the same error `Device::gpu(0)` gives).
pub fn adapter_summary() -> Result<String> {
    let c = context::context()?;
    let i = &c.info;
    Ok(format!(
        "{} ({:?}, {:?}, driver {} {}){}{}",
        i.name,
        i.backend,
        i.device_type,
        i.driver,
        i.driver_info,
        if c.has_f16 { ", f16" } else { "" },
        if c.has_coop { ", coop-matrix" } else { "" }
    ))
}

/// Idle bytes the GPU keeps for reuse (storage pool and read-back buffers), for
/// [`crate::memory::cache`].
pub(crate) fn cached_bytes() -> u64 {
    buffer::pooled_bytes() + readback::staging_bytes() + upload::ring_bytes()
}

/// Sets the storage pool's cap; the previous cap (for [`crate::memory::set_cache_limit`]).
pub(crate) fn set_cache_limit(bytes: u64) -> Result<u64> {
    let old = buffer::set_pool_cap(bytes);
    // The read-back pool keeps at most the same cap; the simplest way to honour a lower
    // one at once is to empty it.
    if bytes < old {
        readback::clear_staging();
    }
    Ok(old)
}

/// Frees every idle GPU buffer (for [`crate::memory::clear_cache`]).
pub(crate) fn clear_cache() -> Result<()> {
    buffer::clear_pool();
    readback::clear_staging();
    upload::clear_ring();
    Ok(())
}

/// How many times this process has copied host data to the GPU (every upload: arrays made
/// on the host and read by GPU ops, `to_device`, empty results). For tests and profiling:
/// a host array read by many GPU ops is uploaded once.
pub fn uploads() -> u64 {
    readback::UPLOADS.load(Ordering::Relaxed)
}

/// [`uploads`] made by this thread's evals only: exact where other threads upload too.
pub fn uploads_here() -> u64 {
    readback::UPLOADS_HERE.with(std::cell::Cell::get)
}

/// Commands recorded for `stream` and not yet submitted to the GPU: work that a
/// read-back or [`crate::synchronize`] on another stream leaves alone. Streams whose
/// indices are equal modulo 64 share one encoder. For tests and profiling.
pub fn unsubmitted(stream: &Stream) -> usize {
    encoder::unsubmitted(stream)
}

/// GPU time per kernel since the last [`reset_kernel_times`], from timestamp queries:
/// `None` unless the process started with `LAZULI_GPU_TIMING=1` and the adapter offers
/// timestamp queries (`Err` when there is no adapter). Waits for the batches submitted
/// so far; work still recorded and unsubmitted is not counted (`synchronize` first).
/// A profiler: each kernel's pass writes two timestamps and each batch reads them back,
/// which costs the host a little; the kernels' durations are what they would be untimed.
pub fn kernel_times() -> Result<Option<crate::backend::KernelTimes>> {
    Ok(timing::report(context::context()?))
}

/// Forgets the kernel times measured so far (see [`kernel_times`]).
pub fn reset_kernel_times() {
    timing::reset();
}

/// True when `gpu(0)` is a software rasteriser (lavapipe, WARP...): slow, for tests.
/// False when there is no adapter.
pub fn is_software_adapter() -> bool {
    context::context().is_ok_and(|c| c.info.device_type == wgpu::DeviceType::Cpu)
}

/// The wgpu backend. All state is in leaked statics (see `context`).
pub(crate) struct GpuBackend;

pub(crate) fn unsupported(msg: impl Into<String>) -> Error {
    Error::Unsupported { backend: "gpu".into(), msg: msg.into() }
}

/// `Err(Unsupported)` for dtypes the GPU never runs.
fn check_dtype(op: &str, dtype: DType) -> Result<()> {
    match dtype {
        DType::Bool | DType::U32 | DType::I32 | DType::F32 | DType::F16 => Ok(()),
        DType::I64 | DType::BF16 | DType::F64 => Err(unsupported(format!(
            "{op}: {dtype} is not supported on the GPU; convert with astype(DType::F32) (or an \
             int32/uint32 type) first, or run on the CPU device"
        ))),
    }
}

fn gpu_buf(b: &Buffer) -> Result<&GpuBuffer> {
    b.as_any()
        .downcast_ref::<GpuBuffer>()
        .ok_or_else(|| Error::Device("gpu backend was handed a buffer of another device".into()))
}

impl Backend for GpuBackend {
    fn name(&self) -> &str {
        "gpu"
    }

    fn upload(&self, stream: &Stream, dtype: DType, bytes: &[u8]) -> Result<Buffer> {
        check_dtype("upload", dtype)?;
        // Empty buffers hold no f16 values (eval makes them for empty outputs).
        if dtype == DType::F16 && !bytes.is_empty() && !context::context()?.has_f16 {
            return Err(unsupported("float16 needs an adapter with SHADER_F16; convert with astype(DType::F32) first"));
        }
        Ok(Arc::new(readback::upload(stream, dtype, bytes)?))
    }

    fn download(&self, buffer: &Buffer) -> Result<Vec<u8>> {
        let b = gpu_buf(buffer)?;
        let mut out = vec![0u8; b.len * b.dtype.size()];
        readback::download_into(b, b.dtype, b.len, &mut out)?;
        Ok(out)
    }

    fn download_into(&self, buffer: &Buffer, out: &mut [u8]) -> Result<()> {
        let b = gpu_buf(buffer)?;
        readback::download_into(b, b.dtype, b.len, out)
    }

    fn run(&self, stream: &Stream, op: &Primitive, inputs: &[Input<'_>], outs: &[Meta]) -> Result<Vec<Buffer>> {
        let ctx = context::context()?;
        ctx.check()?;
        let name = op.name();
        let [out] = outs else {
            return Err(unsupported(format!("{name} with {} outputs", outs.len())));
        };
        check_dtype(name, out.dtype)?;
        for i in inputs {
            check_dtype(name, i.meta.dtype)?;
        }
        let args = kernels::Args {
            s: stream,
            ins: inputs.iter().map(|i| gpu_buf(i.buffer)).collect::<Result<_>>()?,
            shapes: inputs.iter().map(|i| i.meta.shape.as_slice()).collect(),
            raw: inputs,
            out,
        };
        let result = crate::backend::dispatch::<kernels::Args<'_>>(op, &args)?;
        announce_ready()?;
        Ok(vec![result])
    }

    fn synchronize(&self, stream: &Stream) -> Result<()> {
        encoder::synchronize(stream)
    }

    /// Every primitive has a kernel; the dtypes the GPU lacks have no decomposition
    /// either, so they reach `run`, which says what to convert to.
    fn supports(&self, _op: &Primitive, _inputs: &[&Meta]) -> bool {
        true
    }

    fn wait_idle(&self, limit: std::time::Duration) -> bool {
        // A device still being created has nothing in flight yet, but `context()` would
        // block on it without a bound: wait for creation within the limit first.
        let deadline = std::time::Instant::now() + limit;
        while context::CREATING.load(Ordering::SeqCst) {
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        encoder::wait_idle(deadline.saturating_duration_since(std::time::Instant::now()))
    }

    fn fuser(&self) -> Option<&'static dyn crate::fusion::Fuser> {
        Some(&fused::GpuFuser)
    }

    fn exit_policy(&self) -> ExitPolicy {
        if context::CREATING.load(Ordering::SeqCst) { ExitPolicy::HardExitNow } else { ExitPolicy::HardExit }
    }
}

/// The GPU backend if its device creation has begun (else `None`: nothing to drain, and
/// exit may proceed normally). Never starts the device itself.
pub(crate) fn started() -> Option<Arc<dyn Backend>> {
    static B: OnceLock<Arc<dyn Backend>> = OnceLock::new();
    context::CREATION_BEGUN.load(Ordering::SeqCst).then(|| B.get_or_init(|| Arc::new(GpuBackend)).clone())
}

/// The WGSL kernel the GPU backend generates for a fused region (for tests that
/// validate generated code with naga, and for backend authors).
pub fn fused_source(program: &crate::fusion::Program) -> Result<String> {
    fused::source(program)
}

/// After the first kernel has been compiled and has finished, tells the lifecycle layer
/// how to wait for this device, which (re-)registers the exit hook: lavapipe's LLVM
/// registers its exit-time destructors at the first shader compile, and exit handlers
/// run in reverse order, so only a hook registered after that runs before them
/// (shared/facts/teardown.md).
fn announce_ready() -> Result<()> {
    static READY: std::sync::Once = std::sync::Once::new();
    if !READY.is_completed() {
        encoder::synchronize_all()?;
        READY.call_once(crate::lifecycle::driver_step);
    }
    Ok(())
}

/// Test hook: destroys the GPU device (wgpu's `Device::destroy`), as a driver reset or a
/// removed GPU would. Work in flight fails within `LAZULI_GPU_TIMEOUT_S`; every later GPU
/// call, and every read of a GPU array, returns `Err(Error::Gpu)` naming the loss; the CPU
/// keeps working. Irreversible for the process: run such a test in a process (test
/// binary) of its own. `Err(Device)` if there is no GPU.
pub fn destroy_device_for_testing() -> Result<()> {
    let ctx = context::context()?;
    ctx.mark_lost("destroyed through lazuli::backend::gpu::destroy_device_for_testing".into());
    // Not while another thread polls or submits (the wgpu-core hazard `poll_lock` guards).
    let _g = encoder::poll_lock();
    ctx.device.destroy();
    Ok(())
}

/// A `u32` parameter, or an `Err` if the value does not fit.
pub(crate) fn u32_param(what: &str, v: usize) -> Result<u32> {
    u32::try_from(v).map_err(|_| unsupported(format!("{what}: {v} exceeds the GPU kernels' 32-bit indexing")))
}

/// An `i32` parameter, or an `Err` if the value does not fit.
pub(crate) fn i32_param(what: &str, v: isize) -> Result<i32> {
    i32::try_from(v).map_err(|_| unsupported(format!("{what}: {v} exceeds the GPU kernels' 32-bit indexing")))
}
