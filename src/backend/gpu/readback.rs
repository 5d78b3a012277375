//! Uploads and read-backs between host bytes (the crate's layout: bool one byte) and
//! device buffers (bool as u32 0/1).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::buffer::{GpuBuffer, align4, create_with_data, device_elem_size};
use super::context::context;
use super::encoder;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::stream::{Stream, registry};

const PENDING: u8 = 0;
const MAPPED: u8 = 1;
const FAILED: u8 = 2;
const STALE: u8 = 3;

/// Uploads of host data so far (see [`super::uploads`]).
pub(crate) static UPLOADS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

thread_local! {
    /// This thread's share of [`UPLOADS`] (see [`super::uploads_here`]).
    pub(crate) static UPLOADS_HERE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A device buffer holding host bytes of `dtype`.
pub(crate) fn upload(stream: &Stream, dtype: DType, bytes: &[u8]) -> Result<GpuBuffer> {
    UPLOADS.fetch_add(1, Ordering::Relaxed);
    UPLOADS_HERE.with(|c| c.set(c.get() + 1));
    let len = bytes.len() / dtype.size();
    if dtype == DType::Bool {
        let words: Vec<u32> = bytes.iter().map(|&b| (b != 0) as u32).collect();
        return create_with_data(stream, dtype, len, bytemuck::cast_slice(&words));
    }
    if bytes.len() as u64 >= super::upload::RING_MIN {
        return super::upload::through_ring(stream, dtype, len, bytes);
    }
    create_with_data(stream, dtype, len, bytes)
}

/// Host bytes of the first `len` elements of `buf` into `out` (exactly that long), after
/// the work that writes it: one copy, out of the mapped read-back buffer.
pub(crate) fn download_into(buf: &GpuBuffer, dtype: DType, len: usize, out: &mut [u8]) -> Result<()> {
    if out.len() != len * dtype.size() {
        return Err(Error::Internal(format!("read-back of {len} x {dtype} into {} bytes", out.len())));
    }
    if len == 0 {
        return Ok(());
    }
    let ctx = context()?;
    ctx.check_lost()?;
    let bytes = len as u64 * device_elem_size(dtype);
    let size = align4(bytes);
    let staging = Staging::take(ctx, size)?;
    // Into the batch of the lane that wrote it, which is then submitted: other streams'
    // recorded work stays where it is.
    encoder::record(buf.lane, "read-back copy", &[buf], |enc| {
        enc.copy_buffer_to_buffer(buf.raw(), 0, &staging.0, 0, size)
    })?;
    let idx = encoder::flush(buf.lane)?.ok_or_else(|| Error::Gpu("read-back: nothing was submitted".into()))?;
    let state = map(&staging.0.slice(..size), wgpu::MapMode::Read);
    wait_mapped(ctx, &idx, &state, "a read-back")?;
    {
        let view = staging.0.slice(..size).get_mapped_range().map_err(|e| Error::Gpu(format!("read-back: {e}")))?;
        let data = &view[..bytes as usize];
        if dtype == DType::Bool {
            for (o, w) in out.iter_mut().zip(data.chunks_exact(4)) {
                *o = (u32::from_le_bytes([w[0], w[1], w[2], w[3]]) != 0) as u8;
            }
        } else {
            out.copy_from_slice(data);
        }
    }
    staging.0.unmap();
    staging.give_back();
    Ok(())
}

/// Starts mapping `slice`; the returned state leaves `PENDING` once the map callback ran.
pub(super) fn map(slice: &wgpu::BufferSlice<'_>, mode: wgpu::MapMode) -> Arc<AtomicU8> {
    let state = Arc::new(AtomicU8::new(PENDING));
    let signal = state.clone();
    // Runs on whichever thread polls, possibly during exit: only check and signal.
    // Evaluated data outlives the stream that computed it (a closed stream or
    // `shutdown()` does not make it unreadable); only process exit does.
    slice.map_async(mode, move |r| {
        let s = if registry().is_exiting() {
            STALE
        } else if r.is_ok() {
            MAPPED
        } else {
            FAILED
        };
        signal.store(s, Ordering::Release);
    });
    state
}

/// True once a [`map`] callback ran.
pub(super) fn map_settled(state: &AtomicU8) -> bool {
    state.load(Ordering::Acquire) != PENDING
}

/// Waits (bounded) until submission `idx` is done and a [`map`] started before it has
/// settled; `Err` unless the buffer is mapped (`what` names the transfer).
pub(super) fn wait_mapped(
    ctx: &super::context::Context,
    idx: &wgpu::SubmissionIndex,
    state: &AtomicU8,
    what: &str,
) -> Result<()> {
    let done = || map_settled(state);
    encoder::wait(ctx, idx, done)?;
    // The map callback runs in a poll after the submission completes; poll until it has.
    let deadline = Instant::now() + encoder::timeout();
    while !done() {
        if Instant::now() > deadline {
            return Err(encoder::timed_out(ctx, what));
        }
        encoder::poll_once(ctx);
        ctx.check()?;
        std::thread::sleep(Duration::from_micros(50));
    }
    match state.load(Ordering::Acquire) {
        MAPPED => Ok(()),
        STALE => Err(Error::ShutDown),
        _ => Err(Error::Gpu(format!("{}: mapping the buffer for {what} failed", ctx.description))),
    }
}

/// Read-back buffers up to this size are kept for reuse.
const STAGING_KEEP_MAX: u64 = 256 << 20;
/// Bytes of idle read-back buffers kept at most.
const STAGING_KEEP_TOTAL: u64 = 512 << 20;

/// Idle read-back (MAP_READ) buffers, so that a small read-back makes no buffer: sizes are
/// powers of two (at least 256 bytes), unmapped, and no queued command uses them (one is
/// returned only after its data was read).
fn staging_pool() -> &'static Mutex<Vec<wgpu::Buffer>> {
    // Leaked like the device that owns them.
    static P: std::sync::OnceLock<&'static Mutex<Vec<wgpu::Buffer>>> = std::sync::OnceLock::new();
    P.get_or_init(|| Box::leak(Box::new(Mutex::new(Vec::new()))))
}

/// Idle bytes of the read-back pool.
pub(crate) fn staging_bytes() -> u64 {
    staging_pool().lock().unwrap_or_else(|e| e.into_inner()).iter().map(wgpu::Buffer::size).sum()
}

/// Frees the idle read-back buffers.
pub(crate) fn clear_staging() {
    let idle = std::mem::take(&mut *staging_pool().lock().unwrap_or_else(|e| e.into_inner()));
    drop(idle);
}

/// A read-back buffer of at least the asked size, from the pool when one fits. Dropped
/// without [`Staging::give_back`] (an error path), it is freed: it may still be mapped
/// or in use.
struct Staging(wgpu::Buffer);

impl Staging {
    fn take(ctx: &super::context::Context, size: u64) -> Result<Staging> {
        let want = if size <= STAGING_KEEP_MAX { size.next_power_of_two().max(256) } else { size };
        {
            let mut pool = staging_pool().lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = pool.iter().position(|b| b.size() == want) {
                return Ok(Staging(pool.swap_remove(i)));
            }
        }
        let b = ctx.scoped("read-back buffer", || {
            Ok(ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("lazuli read-back"),
                size: want,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }))
        })?;
        Ok(Staging(b))
    }

    /// Returns the (unmapped) buffer to the pool, or frees it when the pool is full.
    fn give_back(self) {
        if self.0.size() > STAGING_KEEP_MAX {
            return;
        }
        let mut pool = staging_pool().lock().unwrap_or_else(|e| e.into_inner());
        let total: u64 = pool.iter().map(wgpu::Buffer::size).sum();
        // Within the cache limit the storage pool has too (`lazuli::memory::set_cache_limit`).
        if total + self.0.size() <= STAGING_KEEP_TOTAL.min(super::buffer::pool_cap()) {
            pool.push(self.0);
        }
    }
}
