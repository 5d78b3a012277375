//! The device layer (HAL): the [`Backend`] trait, device buffers, and the table that maps
//! a [`Device`] to its backend.
//!
//! The crate's own backends (CPU, wgpu GPU) and third-party ones sit behind the same
//! trait; [`register_backend`] plugs a new one in without touching the crate.

pub mod cpu;
pub mod gpu;

use std::any::Any;
use std::sync::{Arc, Mutex, OnceLock};

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

/// One input of a primitive, as the backend sees it.
pub struct Input<'a> {
    /// The data, contiguous, on this backend's device.
    pub buffer: &'a Buffer,
    /// Shape and dtype.
    pub meta: &'a Meta,
}

/// What a device backend implements. Every method may be called from any thread.
pub trait Backend: Send + Sync + 'static {
    /// A short name for messages ("cpu", "gpu").
    fn name(&self) -> &str;
    /// A zero-filled buffer for `len` elements of `dtype`.
    fn allocate(&self, stream: &Stream, dtype: DType, len: usize) -> Result<Buffer>;
    /// A buffer holding `bytes`: host layout of `dtype` (little-endian, bool one byte).
    fn upload(&self, stream: &Stream, dtype: DType, bytes: &[u8]) -> Result<Buffer>;
    /// Host bytes of a buffer made by this backend, in the same layout as `upload`,
    /// waiting for pending work that writes it.
    fn download(&self, buffer: &Buffer, dtype: DType, len: usize) -> Result<Vec<u8>>;
    /// Runs one primitive on `stream`, returning the output buffer. The output may
    /// still be in flight (GPU); `download` and `synchronize` wait for it.
    fn run(&self, stream: &Stream, op: &Primitive, inputs: &[Input<'_>], out: &Meta) -> Result<Buffer>;
    /// Waits until all work submitted on `stream` has finished.
    fn synchronize(&self, stream: &Stream) -> Result<()>;
}

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
