//! Recording and submission: many dispatches share one command encoder; a batch is
//! submitted when it reaches [`MAX_PER_SUBMIT`] commands or when someone needs results
//! (read-back, synchronize), and at most [`MAX_IN_FLIGHT`] submissions are outstanding
//! (the oldest is waited for first), so the queue cannot grow without bound.

use std::collections::VecDeque;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::buffer::GpuBuffer;
use super::context::{Context, context};
use super::params::{Params, words};
use crate::error::{Error, Result};

const MAX_PER_SUBMIT: usize = 64;
const MAX_IN_FLIGHT: usize = 8;

/// Bytes of kernel parameters one batch can hold: [`MAX_PER_SUBMIT`] blocks of at most
/// 256 bytes each (the largest block is 144 bytes; offsets are rounded up to the device's
/// storage-offset alignment, at most 256).
const ARENA_BYTES: u64 = MAX_PER_SUBMIT as u64 * 256;

struct Batch {
    encoder: Option<wgpu::CommandEncoder>,
    /// The parameter blocks of the batch being recorded: one buffer, mapped at creation,
    /// each dispatch writing its block at `used` and binding that range. It is unmapped
    /// just before the batch is submitted, so one buffer (and one copy) per submit
    /// replaces a mapped buffer per dispatch. Created with the encoder.
    arena: Option<wgpu::Buffer>,
    /// Bytes of `arena` written so far.
    used: u64,
    recorded: usize,
    in_flight: VecDeque<wgpu::SubmissionIndex>,
}

impl Batch {
    /// The encoder of the batch being recorded, made (with its parameter arena) if none.
    fn encoder(&mut self, ctx: &Context) -> &mut wgpu::CommandEncoder {
        if self.encoder.is_none() {
            self.arena = Some(ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("lazuli params"),
                size: ARENA_BYTES,
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: true,
            }));
            self.used = 0;
        }
        self.encoder.get_or_insert_with(|| {
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("lazuli") })
        })
    }
}

/// Serialises submissions and polls: wgpu-core 30 can trip an internal assertion when one
/// thread polls for a submission while another submits.
pub(crate) fn poll_lock() -> std::sync::MutexGuard<'static, ()> {
    static L: Mutex<()> = Mutex::new(());
    L.lock().unwrap_or_else(|e| e.into_inner())
}

fn batch() -> &'static Mutex<Batch> {
    // Leaked like the device it records for.
    static B: OnceLock<&'static Mutex<Batch>> = OnceLock::new();
    B.get_or_init(|| {
        Box::leak(Box::new(Mutex::new(Batch {
            encoder: None,
            arena: None,
            used: 0,
            recorded: 0,
            in_flight: VecDeque::new(),
        })))
    })
}

/// Longest a wait on the GPU may take before it is reported as an error.
/// `LAZULI_GPU_TIMEOUT_S` overrides (software drivers are slow).
pub(crate) fn timeout() -> Duration {
    static T: OnceLock<Duration> = OnceLock::new();
    *T.get_or_init(|| {
        let s = std::env::var("LAZULI_GPU_TIMEOUT_S").ok().and_then(|v| v.parse().ok()).unwrap_or(300u64);
        Duration::from_secs(s)
    })
}

/// Records commands into the current batch.
///
/// No error scope per command: errors of recording (none are expected; they would be
/// bugs) reach the device's uncaptured-error handler at once, on this thread, and
/// [`Context::check`] after recording returns them; whatever slips through surfaces at
/// `finish`/`submit`, which run inside one pair of scopes per batch.
pub(crate) fn record(what: &str, f: impl FnOnce(&mut wgpu::CommandEncoder)) -> Result<()> {
    let ctx = context()?;
    ctx.check_lost()?;
    let mut b = batch().lock().unwrap_or_else(|e| e.into_inner());
    f(b.encoder(ctx));
    ctx.check().map_err(|e| Error::Gpu(format!("{what}: {e}")))?;
    b.recorded += 1;
    if b.recorded >= MAX_PER_SUBMIT {
        submit_locked(ctx, &mut b)?;
    }
    Ok(())
}

/// Submits the current batch, if any, and returns the index of the latest submission.
pub(crate) fn flush() -> Result<Option<wgpu::SubmissionIndex>> {
    let ctx = context()?;
    let mut b = batch().lock().unwrap_or_else(|e| e.into_inner());
    submit_locked(ctx, &mut b)?;
    Ok(b.in_flight.back().cloned())
}

fn submit_locked(ctx: &Context, b: &mut Batch) -> Result<()> {
    let Some(enc) = b.encoder.take() else { return Ok(()) };
    ctx.check_lost()?;
    b.recorded = 0;
    if let Some(arena) = b.arena.take() {
        // The blocks written so far become visible to the batch's dispatches (wgpu
        // copies them in before the batch's commands); the buffer is freed once the
        // submission is done with it.
        arena.unmap();
    }
    let idx = {
        let _g = poll_lock();
        ctx.scoped("submit", || Ok(ctx.queue.submit([enc.finish()])))?
    };
    b.in_flight.push_back(idx);
    while b.in_flight.len() > MAX_IN_FLIGHT {
        let oldest = b.in_flight.pop_front().expect("non-empty");
        wait(ctx, &oldest, || false)?;
    }
    Ok(())
}

/// Waits (bounded) for a submission, or until `done()` holds after a poll. Timeouts and
/// device loss come back as `Err(Error::Gpu)`.
pub(crate) fn wait(ctx: &Context, idx: &wgpu::SubmissionIndex, done: impl Fn() -> bool) -> Result<()> {
    if spin(ctx, idx, &done)? {
        return Ok(());
    }
    let deadline = Instant::now() + timeout();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timed_out(ctx, "GPU work"));
        }
        if poll_for(ctx, idx, left.min(Duration::from_millis(500)))? {
            return Ok(());
        }
        ctx.check()?;
        if done() {
            return Ok(());
        }
    }
}

/// Waits at most `step` for submission `idx`; true if it is done (the device checked).
fn poll_for(ctx: &Context, idx: &wgpu::SubmissionIndex, step: Duration) -> Result<bool> {
    let polled = {
        let _g = poll_lock();
        let wait = wgpu::PollType::Wait { submission_index: Some(idx.clone()), timeout: Some(step) };
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ctx.device.poll(wait)))
            .map_err(|_| Error::Gpu(format!("{}: wgpu panicked while polling", ctx.description)))?
    };
    match polled {
        Ok(_) => {
            ctx.check()?;
            Ok(true)
        }
        Err(wgpu::PollError::Timeout) => Ok(false),
        Err(e) => Err(Error::Gpu(format!("{}: waiting for the GPU: {e}", ctx.description))),
    }
}

/// How long [`wait`] checks without blocking before it sleeps in the driver: a blocking
/// wait costs a thread wake-up after the GPU finishes, which short work (a tiny op read
/// back) does not need to pay. Not on software adapters, whose work runs on the cores a
/// spinning thread would take.
const SPIN: Duration = Duration::from_micros(200);

/// Checks (without blocking, for at most [`SPIN`]) whether submission `idx` is done or
/// `done()` holds; true if so.
fn spin(ctx: &Context, idx: &wgpu::SubmissionIndex, done: &impl Fn() -> bool) -> Result<bool> {
    if ctx.info.device_type == wgpu::DeviceType::Cpu {
        return Ok(false);
    }
    let until = Instant::now() + SPIN;
    while Instant::now() < until {
        if poll_for(ctx, idx, Duration::ZERO)? || done() {
            return Ok(true);
        }
        std::hint::spin_loop();
    }
    Ok(false)
}

/// The error for a wait past [`timeout`], which also marks the device lost: the work is
/// still queued in the driver, so the next submission would block behind it (13 s
/// inside `queue.submit` on lavapipe, holding the locks every GPU thread needs). Failing
/// fast from here on is the only bound that holds.
pub(crate) fn timed_out(ctx: &Context, what: &str) -> Error {
    let why = format!(
        "{what} did not finish within {:?}; the device is treated as lost (set LAZULI_GPU_TIMEOUT_S to wait longer)",
        timeout()
    );
    ctx.mark_lost(why.clone());
    Error::Gpu(format!("{}: {why}", ctx.description))
}

/// One non-blocking poll (runs ready map callbacks).
pub(crate) fn poll_once(ctx: &Context) {
    let _g = poll_lock();
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ctx.device.poll(wgpu::PollType::Poll)));
}

/// Flushes and waits for everything submitted so far.
pub(crate) fn synchronize() -> Result<()> {
    if let Some(idx) = flush()? {
        wait(context()?, &idx, || false)?;
    }
    Ok(())
}

/// One kernel launch: the pipeline, its parameters (binding 0) and buffers by binding.
///
/// Per launch: the parameter block is written into the batch's arena (no buffer of its
/// own), one bind group is made, one compute pass recorded; one lock (the batch's) is
/// taken, and no error scope (see [`record`]).
pub(crate) fn dispatch<P: Params>(
    ctx: &Context,
    pipeline: &wgpu::ComputePipeline,
    params: &P,
    buffers: &[(u32, &GpuBuffer)],
    groups: [u32; 3],
) -> Result<()> {
    if groups.contains(&0) {
        return Ok(());
    }
    ctx.check_lost()?;
    let data: &[u8] = bytemuck::cast_slice(words(params));
    let len = (data.len() as u64).max(4);
    let align = u64::from(ctx.limits.min_storage_buffer_offset_alignment.max(4));
    let layout = pipeline.get_bind_group_layout(0);
    let mut b = batch().lock().unwrap_or_else(|e| e.into_inner());
    if b.encoder.is_some() && b.used + len > ARENA_BYTES {
        submit_locked(ctx, &mut b)?;
    }
    b.encoder(ctx);
    let offset = b.used;
    b.used = (offset + len).div_ceil(align) * align;
    let arena = b.arena.as_ref().expect("made with the encoder");
    {
        let mut view = arena
            .slice(offset..offset + len)
            .get_mapped_range_mut()
            .map_err(|e| Error::Gpu(format!("kernel parameters: {e}")))?;
        view.slice(..data.len()).copy_from_slice(data);
    }
    let p = wgpu::BindGroupEntry {
        binding: 0,
        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: arena,
            offset,
            size: wgpu::BufferSize::new(len),
        }),
    };
    fn e<'a>(&(slot, buf): &(u32, &'a GpuBuffer)) -> wgpu::BindGroupEntry<'a> {
        wgpu::BindGroupEntry { binding: slot, resource: buf.binding() }
    }
    let make = |entries: &[wgpu::BindGroupEntry<'_>]| {
        ctx.device.create_bind_group(&wgpu::BindGroupDescriptor { label: None, layout: &layout, entries })
    };
    // Fixed-size entry lists for the common kernels: no allocation per launch. Fused
    // kernels bind up to MAX_FUSED_INPUTS + 1 buffers and take the general path.
    let group = match buffers {
        [a] => make(&[p, e(a)]),
        [a, b] => make(&[p, e(a), e(b)]),
        [a, b, c] => make(&[p, e(a), e(b), e(c)]),
        [a, b, c, d] => make(&[p, e(a), e(b), e(c), e(d)]),
        many => make(&std::iter::once(p).chain(many.iter().map(e)).collect::<Vec<_>>()),
    };
    {
        let enc = b.encoder.as_mut().expect("made above");
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(groups[0], groups[1], groups[2]);
    }
    ctx.check().map_err(|e| Error::Gpu(format!("dispatch: {e}")))?;
    b.recorded += 1;
    if b.recorded >= MAX_PER_SUBMIT {
        submit_locked(ctx, &mut b)?;
    }
    Ok(())
}

/// Workgroup grid for `threads` threads of 256: 1-D up to the per-dimension limit, then 2-D
/// (kernels rebuild the flat index with `flat_id`).
pub(crate) fn grid(ctx: &Context, threads: usize) -> Result<[u32; 3]> {
    let max = ctx.limits.max_compute_workgroups_per_dimension.max(1) as usize;
    let groups = threads.div_ceil(256);
    if groups <= max {
        return Ok([groups as u32, 1, 1]);
    }
    let y = groups.div_ceil(max);
    if y > max || threads > u32::MAX as usize {
        return Err(Error::Gpu(format!("{threads} threads exceed what one dispatch can index")));
    }
    Ok([max as u32, y as u32, 1])
}

/// A 1-D launch over `threads` threads.
pub(crate) fn dispatch_1d<P: Params>(
    ctx: &Context,
    pipeline: &wgpu::ComputePipeline,
    params: &P,
    buffers: &[(u32, &GpuBuffer)],
    threads: usize,
) -> Result<()> {
    if threads == 0 {
        return Ok(());
    }
    dispatch(ctx, pipeline, params, buffers, grid(ctx, threads)?)
}

/// Copies `bytes` (rounded up to 4) from one buffer to another, in queue order.
pub(crate) fn copy(src: &GpuBuffer, dst: &GpuBuffer, bytes: u64) -> Result<()> {
    let n = super::buffer::align4(bytes).min(src.raw().size()).min(dst.raw().size());
    record("copy", |enc| enc.copy_buffer_to_buffer(src.raw(), 0, dst.raw(), 0, n))
}

/// Waits at most `limit` for the submissions made so far, without submitting anything
/// new; true once idle (or when there is no device). For the exit hook and `shutdown`.
pub(crate) fn wait_idle(limit: Duration) -> bool {
    let Ok(ctx) = context() else { return true };
    let deadline = Instant::now() + limit;
    // try_lock: a thread that is recording right now gets until the deadline to finish.
    let last = loop {
        match batch().try_lock() {
            Ok(b) => break b.in_flight.back().cloned(),
            // A kernel that panicked while recording (eval catches it) leaves the lock
            // poisoned; the batch itself is still consistent enough to wait on.
            Err(std::sync::TryLockError::Poisoned(p)) => break p.into_inner().in_flight.back().cloned(),
            Err(std::sync::TryLockError::WouldBlock) => {}
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    };
    let limit = deadline.saturating_duration_since(Instant::now());
    let Some(idx) = last else { return true };
    let _g = poll_lock();
    let wait = wgpu::PollType::Wait { submission_index: Some(idx), timeout: Some(limit) };
    matches!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ctx.device.poll(wait))), Ok(Ok(_)))
}
