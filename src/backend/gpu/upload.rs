//! Large uploads through a ring of reused staging buffers.
//!
//! A buffer mapped at creation makes wgpu allocate a host-visible staging buffer of the
//! whole size for every upload, and the driver pins that memory each time: uploading
//! 256 MB that way took about 0.3 s on an H200 host (the transfer row's 0.95 s less its
//! measured host copy and read-back), against 40 ms for PyTorch. Here a few staging
//! buffers of [`RING_CHUNK`] bytes are kept mapped between uploads; each chunk is copied
//! into one, unmapped, copied on the GPU into the destination (recorded in the batch, so
//! after every command queued before), and mapped again for the next chunk, which
//! meanwhile fills the other buffer.

use std::sync::atomic::AtomicU8;
use std::sync::{Arc, Mutex, MutexGuard};

use super::buffer::{GpuBuffer, align4, alloc};
use super::context::{Context, context};
use super::encoder;
use super::readback::{map, wait_mapped};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::stream::Stream;

/// Uploads of at least this many bytes go through the ring; smaller ones are mapped at
/// creation (one small allocation, no wait).
pub(super) const RING_MIN: u64 = 4 << 20;
/// Bytes of one staging buffer: large enough that a chunk's copy and wait are noise
/// beside its memcpy, small enough that the ring stays a small cache.
const RING_CHUNK: u64 = 32 << 20;
/// Staging buffers in the ring: one is filled while the GPU copies out of the other.
const RING_LEN: usize = 2;

/// One staging buffer, and the mapping it waits for (none: mapped now).
struct Slot {
    buf: wgpu::Buffer,
    /// A mapping started after submission `.0`; `.1` settles when it completes.
    pending: Option<(wgpu::SubmissionIndex, Arc<AtomicU8>)>,
}

/// The ring's buffers. Leaked like the device that owns them. Lock order: the ring, then
/// the batch (`encoder::record`, `flush`), then the poll lock (`wait_mapped`); nothing
/// takes the ring while holding either.
fn ring() -> MutexGuard<'static, Vec<Slot>> {
    static R: std::sync::OnceLock<&'static Mutex<Vec<Slot>>> = std::sync::OnceLock::new();
    R.get_or_init(|| Box::leak(Box::new(Mutex::new(Vec::new())))).lock().unwrap_or_else(|e| e.into_inner())
}

/// Bytes the ring keeps (for [`crate::memory::cache`]).
pub(super) fn ring_bytes() -> u64 {
    ring().iter().map(|s| s.buf.size()).sum()
}

/// Frees the ring's buffers (a mapping still pending is abandoned with them).
pub(super) fn clear_ring() {
    let slots = std::mem::take(&mut *ring());
    drop(slots);
}

/// A new staging buffer, mapped.
fn new_slot(ctx: &Context) -> Result<Slot> {
    let buf = ctx.scoped("upload staging buffer", || {
        Ok(ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("lazuli upload ring"),
            size: RING_CHUNK,
            usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: true,
        }))
    })?;
    Ok(Slot { buf, pending: None })
}

/// A device buffer of `len` elements of `dtype` holding `bytes` (device layout), copied
/// through the ring chunk by chunk.
pub(super) fn through_ring(stream: &Stream, dtype: DType, len: usize, bytes: &[u8]) -> Result<GpuBuffer> {
    let ctx = context()?;
    ctx.check_lost()?;
    let dst = alloc(stream, dtype, len)?;
    let mut slots = ring();
    for (i, piece) in bytes.chunks(RING_CHUNK as usize).enumerate() {
        let k = i % RING_LEN;
        if slots.len() <= k {
            slots.push(new_slot(ctx)?);
        }
        if let Some((idx, state)) = slots[k].pending.take()
            && let Err(e) = wait_mapped(ctx, &idx, &state, "an upload")
        {
            // The slot is in no known state: drop it (the next upload makes another).
            slots.remove(k);
            return Err(e);
        }
        let slot = &mut slots[k];
        // Copies move whole 4-byte words; the destination's bucket has room for the tail.
        let size = align4(piece.len() as u64);
        {
            let mut view = slot
                .buf
                .slice(..size)
                .get_mapped_range_mut()
                .map_err(|e| Error::Gpu(format!("{}: upload staging: {e}", ctx.description)))?;
            view.slice(..piece.len()).copy_from_slice(piece);
        }
        slot.buf.unmap();
        let offset = i as u64 * RING_CHUNK;
        let copied = encoder::record(dst.lane, "upload copy", &[&dst], |enc| {
            enc.copy_buffer_to_buffer(&slot.buf, 0, dst.raw(), offset, size)
        })
        .and_then(|()| encoder::flush(dst.lane))
        .and_then(|idx| idx.ok_or_else(|| Error::Gpu("upload: nothing was submitted".into())));
        let idx = match copied {
            Ok(idx) => idx,
            Err(e) => {
                // Unmapped and not being mapped again: drop it, as above.
                slots.remove(k);
                return Err(e);
            }
        };
        let state = map(&slot.buf.slice(..), wgpu::MapMode::Write);
        slot.pending = Some((idx, state));
    }
    Ok(dst)
}
