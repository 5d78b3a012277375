//! Device buffers and the size-bucketed pool they return to when dropped.
//!
//! Reuse is safe without tracking GPU use: every write to a buffer (a kernel output, a
//! copy) is recorded on the one queue after whatever read it before it was released,
//! and the queue runs commands in order. Only `Queue::write_buffer` would jump that
//! order, so nothing here uses it: uploads go through buffers mapped at creation.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use super::context::{Context, context};
use crate::backend::DeviceBuffer;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::stream::{Device, Stream};

/// Usage of every pooled storage buffer, so any buffer can serve any role.
pub(crate) const STORAGE: wgpu::BufferUsages =
    wgpu::BufferUsages::STORAGE.union(wgpu::BufferUsages::COPY_SRC).union(wgpu::BufferUsages::COPY_DST);

/// Bytes kept idle in the pool at most; beyond that, released buffers are freed.
const POOL_MAX_BYTES: u64 = 1 << 30;

/// A GPU buffer holding `len` elements of `dtype` in the device layout (bool as u32).
pub struct GpuBuffer {
    pub(crate) raw: Option<wgpu::Buffer>,
    /// Bytes of data (device layout), before rounding up to the bucket.
    pub(crate) bytes: u64,
    pub(crate) len: usize,
    pub(crate) dtype: DType,
    /// The stream that produced it; read-backs check its generation.
    pub(crate) stream: Stream,
}

impl GpuBuffer {
    /// The wgpu buffer (present until drop).
    pub(crate) fn raw(&self) -> &wgpu::Buffer {
        self.raw.as_ref().expect("GpuBuffer used after drop")
    }

    /// A binding of exactly the data (at least 4 bytes: empty bindings are invalid).
    pub(crate) fn binding(&self) -> wgpu::BindingResource<'_> {
        wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: self.raw(),
            offset: 0,
            // 16-byte multiples, so vec4 views (the tuned matmul) validate; the pool's
            // buckets are 16-byte multiples, so this never passes the buffer's end.
            size: wgpu::BufferSize::new(align16(self.bytes).min(self.raw().size())),
        })
    }
}

impl std::fmt::Debug for GpuBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuBuffer({} x {}, {} bytes)", self.len, self.dtype, self.bytes)
    }
}

impl DeviceBuffer for GpuBuffer {
    fn device(&self) -> Device {
        Device::gpu(0)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for GpuBuffer {
    fn drop(&mut self) {
        if let Some(b) = self.raw.take() {
            if crate::lifecycle::is_exiting() {
                // The driver may be tearing down: never call into it from here.
                std::mem::forget(b);
                return;
            }
            pool().put(b);
        }
    }
}

/// Bytes one element takes on the device.
pub(crate) fn device_elem_size(dtype: DType) -> u64 {
    match dtype {
        DType::Bool => 4,
        other => other.size() as u64,
    }
}

pub(crate) fn align4(n: u64) -> u64 {
    n.max(4).div_ceil(4) * 4
}

fn align16(n: u64) -> u64 {
    n.max(16).div_ceil(16) * 16
}

/// Bucket size for a request: powers of two up to 1 MiB, then multiples of 1 MiB (so
/// large arrays waste little), never above what the device allows.
fn bucket(bytes: u64, ctx: &Context) -> u64 {
    let b = align16(bytes);
    let rounded = if b <= 1 << 20 { b.next_power_of_two().max(256) } else { b.div_ceil(1 << 20) << 20 };
    let cap = ctx.limits.max_buffer_size.min(ctx.limits.max_storage_buffer_binding_size);
    if rounded > cap { b } else { rounded }
}

struct Pool {
    free: Mutex<(HashMap<u64, Vec<wgpu::Buffer>>, u64)>,
}

fn pool() -> &'static Pool {
    // Leaked like the context: buffers may drop during process exit.
    static P: OnceLock<&'static Pool> = OnceLock::new();
    P.get_or_init(|| Box::leak(Box::new(Pool { free: Mutex::new((HashMap::new(), 0)) })))
}

impl Pool {
    fn take(&self, size: u64) -> Option<wgpu::Buffer> {
        let mut g = self.free.lock().unwrap_or_else(|e| e.into_inner());
        let b = g.0.get_mut(&size)?.pop()?;
        g.1 -= size;
        Some(b)
    }

    fn put(&self, b: wgpu::Buffer) {
        let size = b.size();
        if b.usage() != STORAGE {
            return;
        }
        let mut g = self.free.lock().unwrap_or_else(|e| e.into_inner());
        if g.1 + size > POOL_MAX_BYTES {
            return; // dropped: wgpu frees it once the GPU is done with it
        }
        g.1 += size;
        g.0.entry(size).or_default().push(b);
    }
}

/// An uninitialised (or stale) buffer for `len` elements of `dtype`, from the pool if one fits.
pub(crate) fn alloc(stream: &Stream, dtype: DType, len: usize) -> Result<GpuBuffer> {
    let ctx = context()?;
    let bytes = len as u64 * device_elem_size(dtype);
    ctx.check_size("allocate", bytes)?;
    let size = bucket(bytes, ctx);
    let raw = match pool().take(size) {
        Some(b) => b,
        None => ctx.scoped("allocate", || {
            Ok(ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("lazuli"),
                size,
                usage: STORAGE,
                mapped_at_creation: false,
            }))
        })?,
    };
    Ok(GpuBuffer { raw: Some(raw), bytes, len, dtype, stream: *stream })
}

/// A buffer holding `data` (device layout). Mapped at creation, so the data is in place
/// before any queued command can see the buffer.
pub(crate) fn create_with_data(stream: &Stream, dtype: DType, len: usize, data: &[u8]) -> Result<GpuBuffer> {
    let ctx = context()?;
    let bytes = data.len() as u64;
    ctx.check_size("upload", bytes)?;
    let size = bucket(bytes, ctx);
    let raw = ctx.scoped("upload", || {
        let b = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("lazuli upload"),
            size,
            usage: STORAGE,
            mapped_at_creation: true,
        });
        {
            let mut view = b.slice(..).get_mapped_range_mut().map_err(|e| Error::Gpu(format!("upload: {e}")))?;
            view.slice(..data.len()).copy_from_slice(data);
        }
        b.unmap();
        Ok(b)
    })?;
    Ok(GpuBuffer { raw: Some(raw), bytes, len, dtype, stream: *stream })
}

/// A small read-only buffer of kernel parameters, fresh per dispatch (see module docs
/// for why not `write_buffer`).
pub(crate) fn params(ctx: &Context, words: &[u32]) -> Result<wgpu::Buffer> {
    let data: &[u32] = if words.is_empty() { &[0] } else { words };
    let b = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("lazuli params"),
        size: (data.len() * 4) as u64,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: true,
    });
    b.slice(..)
        .get_mapped_range_mut()
        .map_err(|e| Error::Gpu(format!("params: {e}")))?
        .copy_from_slice(bytemuck::cast_slice(data));
    b.unmap();
    Ok(b)
}
