//! Device buffers and the size-bucketed pool they return to when dropped.
//!
//! Reuse needs no tracking of GPU work within a stream: every write to a buffer (a
//! kernel output, a copy) is recorded in the stream's batch after whatever read it
//! before it was released, and the one queue runs commands in order. Across streams,
//! whose batches are submitted independently, a pooled buffer keeps the set of lanes
//! that used it and [`alloc`] hands it only to a lane for which the others have
//! submitted everything (`encoder::clean`), making a new buffer otherwise. Only
//! `Queue::write_buffer` would jump queue order, so nothing here uses it: uploads go
//! through buffers mapped at creation or copies recorded in the batch.

use std::any::Any;
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, OnceLock};

use super::context::{Context, context};
use super::encoder::{self, Lane};
use crate::backend::DeviceBuffer;
use crate::backend::pool::{Cap, Pool};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::stream::{Device, Stream};

/// Usage of every pooled storage buffer, so any buffer can serve any role.
pub(crate) const STORAGE: wgpu::BufferUsages =
    wgpu::BufferUsages::STORAGE.union(wgpu::BufferUsages::COPY_SRC).union(wgpu::BufferUsages::COPY_DST);

/// The least the default cap keeps idle: small programs never free and reallocate.
const POOL_FLOOR_BYTES: u64 = 1 << 30;

/// A GPU buffer holding `len` elements of `dtype` in the device layout (bool as u32).
pub(crate) struct GpuBuffer {
    pub(crate) raw: Option<wgpu::Buffer>,
    /// Bytes of data (device layout), before rounding up to the bucket.
    pub(crate) bytes: u64,
    pub(crate) len: usize,
    pub(crate) dtype: DType,
    /// The lane of the stream that made it, which records its one write.
    pub(crate) lane: Lane,
    /// The lanes whose batches have recorded commands using it (bits of [`Lane::bit`]),
    /// carried into the pool so a reuse by another lane is ordered after them.
    pub(crate) users: AtomicU64,
}

impl GpuBuffer {
    fn new(raw: wgpu::Buffer, bytes: u64, len: usize, dtype: DType, lane: Lane) -> GpuBuffer {
        GpuBuffer { raw: Some(raw), bytes, len, dtype, lane, users: AtomicU64::new(lane.bit()) }
    }

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
            crate::memory::GPU.sub(b.size());
            if crate::lifecycle::is_exiting() {
                // The driver may be tearing down: never call into it from here.
                std::mem::forget(b);
                return;
            }
            release(b, *self.users.get_mut());
        }
    }
}

/// Bytes one element takes on the device.
pub(crate) fn device_elem_size(dtype: DType) -> u64 {
    match dtype {
        // Bool is a u32 word on the device (WGSL has no byte storage).
        DType::Bool => 4,
        DType::U32 | DType::I32 | DType::I64 | DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {
            dtype.size() as u64
        }
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

/// An idle buffer and the lanes that used it (see [`GpuBuffer::users`]).
struct Idle(wgpu::Buffer, u64);

fn pool() -> &'static Mutex<Pool<Idle>> {
    // Leaked like the context: buffers may drop during process exit.
    static P: OnceLock<&'static Mutex<Pool<Idle>>> = OnceLock::new();
    P.get_or_init(|| Box::leak(Box::new(Mutex::new(Pool::new(Cap::HighWater(POOL_FLOOR_BYTES))))))
}

fn lock_pool() -> std::sync::MutexGuard<'static, Pool<Idle>> {
    pool().lock().unwrap_or_else(|e| e.into_inner())
}

/// Idle bytes in the pool.
pub(crate) fn pooled_bytes() -> u64 {
    lock_pool().bytes
}

/// The pool's cap now: idle bytes kept at most.
pub(crate) fn pool_cap() -> u64 {
    lock_pool().cap.bytes(crate::memory::GPU.high_water())
}

/// Sets the pool's cap in bytes (evicting down to it now); returns the previous cap.
pub(crate) fn set_pool_cap(cap: u64) -> u64 {
    let high = crate::memory::GPU.high_water();
    let (old, evicted) = lock_pool().set_cap(Cap::Bytes(cap), high);
    // Dropped outside the lock, like evictions on release.
    drop(evicted);
    old.bytes(high)
}

/// Frees every idle buffer of the pool (the cap stays).
pub(crate) fn clear_pool() {
    // Dropped after the lock is released (the guard is a temporary of this statement).
    let evicted = lock_pool().take_all();
    drop(evicted);
}

/// Returns a released buffer, used by the lanes of `users`, to the pool (storage buffers
/// only; others are freed).
fn release(b: wgpu::Buffer, users: u64) {
    if b.usage() != STORAGE {
        return;
    }
    let size = b.size();
    // Evicted buffers are dropped after the lock is released: wgpu frees them once the
    // GPU is done with them.
    let high = crate::memory::GPU.high_water();
    let (evicted, cap) = {
        let mut p = lock_pool();
        (p.put(Idle(b, users), size, high), p.cap.bytes(high))
    };
    if !evicted.is_empty() {
        let freed: u64 = evicted.iter().map(|i| i.0.size()).sum();
        log::debug!(
            "gpu buffer pool: at its {cap}-byte cap, evicted {} idle buffers ({freed} bytes) to keep one of {size}",
            evicted.len()
        );
    }
    drop(evicted);
}

/// An uninitialised (or stale) buffer for `len` elements of `dtype`, from the pool if one
/// fits, for `stream` to write. The pool is process-wide; a buffer is handed to a lane
/// only when the other lanes that used it have submitted everything (`encoder::clean`),
/// so its new writes cannot overtake their reads, and without making them submit: one
/// stream's allocations never flush another's work.
pub(crate) fn alloc(stream: &Stream, dtype: DType, len: usize) -> Result<GpuBuffer> {
    let ctx = context()?;
    ctx.check_lost()?;
    let bytes = len as u64 * device_elem_size(dtype);
    ctx.check_size("allocate", bytes)?;
    let size = bucket(bytes, ctx);
    crate::memory::GPU.check(|| "gpu: allocate".into(), size)?;
    let lane = Lane::of(stream);
    let taken = lock_pool().take(size, |Idle(_, users)| encoder::clean(users & !lane.bit()));
    let raw = match taken {
        Some(Idle(b, _)) => b,
        None => ctx
            .scoped("allocate", || {
                Ok(ctx.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("lazuli"),
                    size,
                    usage: STORAGE,
                    mapped_at_creation: false,
                }))
            })
            .map_err(|e| with_size(e, size))?,
    };
    crate::memory::GPU.add(size);
    // A fresh set of users: all the other lanes recorded with it is queued already.
    Ok(GpuBuffer::new(raw, bytes, len, dtype, lane))
}

/// An out-of-memory error from an error scope, with the size that was asked for.
fn with_size(e: Error, size: u64) -> Error {
    match e {
        Error::OutOfMemory { what, limit, .. } => Error::OutOfMemory { what, requested: size, limit },
        e => e,
    }
}

/// A buffer holding `data` (device layout). Mapped at creation, so the data is in place
/// before any queued command can see the buffer.
pub(crate) fn create_with_data(stream: &Stream, dtype: DType, len: usize, data: &[u8]) -> Result<GpuBuffer> {
    let ctx = context()?;
    ctx.check_lost()?;
    let bytes = data.len() as u64;
    ctx.check_size("upload", bytes)?;
    let size = bucket(bytes, ctx);
    crate::memory::GPU.check(|| "gpu: upload".into(), size)?;
    let raw = ctx
        .scoped("upload", || {
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
        })
        .map_err(|e| with_size(e, size))?;
    crate::memory::GPU.add(size);
    Ok(GpuBuffer::new(raw, bytes, len, dtype, Lane::of(stream)))
}
