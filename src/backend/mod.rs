//! The device layer (HAL): the [`Backend`] trait, device buffers, and the table that maps
//! a [`Device`] to its backend.
//!
//! The crate's own backends (CPU, wgpu GPU) and third-party ones sit behind the same
//! trait; [`register_backend`] plugs a new one in without touching the crate.
//!
//! [`gpu`] is the wgpu backend when the `gpu` feature is on (the default); without it the
//! module keeps its public functions, each returning `Err(Error::Device)`, so code that
//! names the GPU still compiles in a CPU-only build.

pub mod cpu;
#[cfg(feature = "gpu")]
pub mod gpu;
#[cfg(not(feature = "gpu"))]
#[path = "gpu_off.rs"]
pub mod gpu;
mod pool;

use std::any::Any;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::primitive::{Meta, Primitive};
use crate::stream::{Device, DeviceKind, Stream};

/// Memory owned by a backend. Immutable once a kernel has produced it, so nodes can share
/// a buffer (reshape, copy to the same device) without copying.
pub trait DeviceBuffer: Any + Send + Sync {
    /// The device whose backend made this buffer.
    fn device(&self) -> Device;
    /// For the owning backend to get its concrete type back.
    fn as_any(&self) -> &dyn Any;
}

/// A shared handle to a device buffer.
pub type Buffer = Arc<dyn DeviceBuffer>;

/// GPU time of one kernel, summed over its launches: see [`gpu::kernel_times`].
#[derive(Debug, Clone, PartialEq)]
pub struct KernelTime {
    /// The kernel: its shader file, dtype and entry point, or `fused#<hash>` for a
    /// generated kernel (one hash per kernel text).
    pub name: String,
    /// How many times it ran.
    pub launches: u64,
    /// Time between the start and the end of its launches on the GPU, summed.
    pub total: Duration,
}

/// What the GPU timing profiler measured since its last reset: see [`gpu::kernel_times`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KernelTimes {
    /// One entry per kernel, longest total first.
    pub kernels: Vec<KernelTime>,
    /// Batches submitted with at least one timed kernel.
    pub submits: u64,
    /// For each such batch, the time from its first kernel's start to its last kernel's
    /// end, summed: beside the kernels' total, the GPU's idle time between kernels of a
    /// batch.
    pub busy: Duration,
    /// The GPU's time between batches: from each batch's last kernel end to the next
    /// batch's first kernel start, summed (batches in the order they ran; one of another
    /// stream that comes back late adds nothing). Includes any time the host gave the GPU
    /// nothing.
    pub idle: Duration,
}

/// One input of a primitive, as the backend sees it.
pub struct Input<'a> {
    /// The data, contiguous, on this backend's device.
    pub buffer: &'a Buffer,
    /// Shape and dtype.
    pub meta: &'a Meta,
}

/// What a device backend implements. Every method may be called from any thread.
///
/// A backend need not run every primitive: [`Backend::supports`] says which it runs, and
/// eval runs the others through their decompositions ([`crate::primitive::Rules::decompose`]).
pub trait Backend: Send + Sync + 'static {
    /// A short name for messages ("cpu", "gpu").
    fn name(&self) -> &str;
    /// A buffer holding `bytes`: host layout of `dtype` (little-endian, bool one byte).
    /// Empty `bytes` make an empty buffer (eval uses that for outputs with no elements).
    fn upload(&self, stream: &Stream, dtype: DType, bytes: &[u8]) -> Result<Buffer>;
    /// Host bytes of a buffer made by this backend, in the same layout as `upload`,
    /// waiting for pending work that writes it.
    fn download(&self, buffer: &Buffer) -> Result<Vec<u8>>;
    /// [`Backend::download`] into `out` (exactly the buffer's host bytes long): a backend
    /// that can write there directly saves the read-back a copy (the GPU does).
    fn download_into(&self, buffer: &Buffer, out: &mut [u8]) -> Result<()> {
        let bytes = self.download(buffer)?;
        if bytes.len() != out.len() {
            return Err(Error::Internal(format!(
                "{}: download_into got room for {} bytes, the buffer holds {}",
                self.name(),
                out.len(),
                bytes.len()
            )));
        }
        out.copy_from_slice(&bytes);
        Ok(())
    }
    /// Runs one primitive on `stream`, returning one buffer per entry of `outputs` (the
    /// shapes and dtypes [`crate::primitive::Rules::infer`] gave). Outputs may still be
    /// in flight (GPU); `download` and `synchronize` wait for them. Never called with an
    /// empty output.
    fn run(&self, stream: &Stream, op: &Primitive, inputs: &[Input<'_>], outputs: &[Meta]) -> Result<Vec<Buffer>>;
    /// Waits until all work submitted on `stream` has finished.
    fn synchronize(&self, stream: &Stream) -> Result<()>;
    /// True if `run` has a kernel for `op` on inputs of these shapes and dtypes. When
    /// false, eval runs the primitive's decomposition instead where it has one (and calls
    /// `run` where it has none, so the backend's own error reaches the user).
    fn supports(&self, _op: &Primitive, _inputs: &[&Meta]) -> bool {
        true
    }
    /// Waits, at most `limit`, until the device has finished all submitted work; true if
    /// it has. Called by [`crate::shutdown`] and at process exit.
    fn wait_idle(&self, _limit: Duration) -> bool {
        true
    }
    /// The backend's runner of fused regions, if it fuses (see [`crate::fusion`]).
    /// Backends without one run every primitive on its own.
    fn fuser(&self) -> Option<&'static dyn crate::fusion::Fuser> {
        None
    }
    /// What process exit must do for this backend (see [`ExitPolicy`]).
    fn exit_policy(&self) -> ExitPolicy {
        ExitPolicy::Return
    }
}

/// What the exit hook does once a backend has been used (see [`crate::lifecycle`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ExitPolicy {
    /// Let the process exit normally: the backend has no exit-time teardown that can
    /// race with work in flight (the CPU).
    Return,
    /// After work has drained, end the process with `_exit(status)` before the driver's
    /// own exit-time teardown runs (it crashed on NVIDIA even with the device idle).
    HardExit,
    /// End the process at once, without draining: the driver is part-way through
    /// creating a device, which crashed when exit ran beside it.
    HardExitNow,
}

/// The kernel of an in-tree backend for one primitive type; `A` is that backend's
/// argument bundle (typed inputs, shapes, the output's meta).
pub(crate) trait Kernel<A> {
    /// Runs the primitive.
    fn run(&self, args: &A) -> Result<Buffer>;
}

macro_rules! define_dispatch {
    ($($(#[$doc:meta])* $v:ident($t:ty),)*) => {
        /// Runs `op` with the kernel table of the backend whose arguments are `A`. Every
        /// primitive type must implement `Kernel<A>`, or the backend calling this does not
        /// compile: a missing kernel is a compile error, not a run-time one.
        pub(crate) fn dispatch<A>(op: &Primitive, args: &A) -> Result<Buffer>
        where
            $($t: Kernel<A>,)*
        {
            match op {
                $(Primitive::$v(p) => p.run(args),)*
            }
        }
    };
}
crate::for_each_primitive!(define_dispatch);

/// Backends registered at run time, indexed by their `DeviceKind::Custom` id.
/// Leaked on purpose, like every registry a driver callback might reach at exit.
fn custom_backends() -> &'static Mutex<Vec<Arc<dyn Backend>>> {
    static CUSTOM: OnceLock<&'static Mutex<Vec<Arc<dyn Backend>>>> = OnceLock::new();
    CUSTOM.get_or_init(|| Box::leak(Box::new(Mutex::new(Vec::new()))))
}

/// Registers a third-party backend and returns the device that routes work to it.
/// Call [`crate::new_stream`] or [`crate::default_stream`] on that device to use it.
pub fn register_backend(backend: Arc<dyn Backend>) -> Result<Device> {
    let mut v = custom_backends().lock().unwrap_or_else(|e| e.into_inner());
    if v.len() >= u16::MAX as usize {
        return Err(Error::Device("too many backends registered".into()));
    }
    v.push(backend);
    Ok(Device { kind: DeviceKind::Custom((v.len() - 1) as u16), index: 0 })
}

/// The backend that runs work for `device`, or an `Err` saying why there is none.
pub fn backend_for(device: Device) -> Result<Arc<dyn Backend>> {
    match device.kind {
        DeviceKind::Cpu => Ok(cpu::backend()),
        DeviceKind::Gpu => gpu::backend(device.index),
        DeviceKind::Custom(id) => custom_backends()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id as usize)
            .cloned()
            .ok_or_else(|| Error::Device(format!("no backend registered for {device}"))),
    }
}

/// Every backend that has been started in this process: the CPU, the GPU once its device
/// creation has begun, and registered ones. Lifecycle asks these to drain at shutdown
/// and exit.
pub(crate) fn started_backends() -> Vec<Arc<dyn Backend>> {
    let mut v = vec![cpu::backend()];
    v.extend(gpu::started());
    v.extend(custom_backends().lock().unwrap_or_else(|e| e.into_inner()).iter().cloned());
    v
}
