//! Recording and submission, one batch per stream.
//!
//! Each stream records into the command encoder of its own [`Lane`]; a lane's batch is
//! submitted when it reaches [`MAX_PER_SUBMIT`] commands, when its kernels add up to
//! [`SUBMIT_THREADS`] threads (large kernels start at once instead of waiting behind the
//! host's recording of the next ones) unless the GPU already has one of the lane's
//! submissions queued behind the one it runs (see [`submit_now`]), or when someone needs
//! its results (a read-back of an array it wrote, `synchronize` on the stream), and at most
//! [`MAX_IN_FLIGHT`] of its submissions are outstanding (the oldest is waited for
//! first), so the queue cannot grow without bound. A read-back or `synchronize` on one
//! stream submits that stream's lane only: another stream's recorded work stays in its
//! encoder.
//!
//! wgpu gives a device one queue, so submissions run in the order they are made. Two
//! hazards follow from recording in several encoders, and [`order`] handles both:
//! - a stream reading a buffer another lane wrote: that lane is submitted first;
//! - a pooled buffer reused by a lane while another lane's unsubmitted commands still
//!   use it: each buffer carries the set of lanes that used it ([`GpuBuffer::users`]),
//!   and `buffer::alloc` hands a lane only buffers whose other users have nothing
//!   unsubmitted ([`clean`]), making a new buffer otherwise.
//!
//! Lock order: at most one lane's batch at a time (a lane is submitted before another
//! is locked), then the poll lock, then [`LAST`] (held only to read or write it).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use super::buffer::GpuBuffer;
use super::context::{Context, context};
use super::params::{Params, words};
use super::timing::Stamps;
use crate::error::{Error, Result};
use crate::stream::Stream;

const MAX_PER_SUBMIT: usize = 64;
const MAX_IN_FLIGHT: usize = 8;

/// Threads of recorded kernels (estimated as workgroups x 256, the size most kernels
/// use) after which a batch is submitted without waiting for
/// [`MAX_PER_SUBMIT`] commands: enough work that a submit's host cost (13-18 us on an
/// H200, BENCHMARKS.md session 11) is small beside it. Below it, small kernels still
/// share submits. Without it, a loop of 20 evaluations of a 64M-element fused kernel
/// recorded all 20 before the GPU started the first, so host and GPU time added up
/// (softmax over 8192 rows of 8192 on an H100: 1.3-1.6 TB/s without, 2.4 with;
/// BENCHMARKS.md, session 14).
const SUBMIT_THREADS: u64 = 1 << 20;

/// [`SUBMIT_THREADS`], or `LAZULI_SUBMIT_THREADS` where set (to measure the policy).
fn submit_threads() -> u64 {
    static T: OnceLock<u64> = OnceLock::new();
    *T.get_or_init(|| {
        std::env::var("LAZULI_SUBMIT_THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(SUBMIT_THREADS)
    })
}

/// Whether a batch of `recorded` commands whose kernels have `threads` threads in all is
/// submitted now; `queued()` says whether the GPU already has one of the lane's
/// submissions waiting behind the one it runs (asked only for a batch past
/// [`submit_threads`]).
///
/// A large batch is held while one is queued: the GPU has that submission's work ahead of
/// it, the next command recorded asks again, and the batch then goes with whatever joined
/// it. Every submission costs the GPU about 31 us of idle time on an H100 (wgpu makes each
/// wait for the previous one's semaphore; BENCHMARKS.md, session 15), 7-12% of a fused
/// 64M-element kernel, so when the host runs ahead, evaluations share submits. Holding
/// only behind a queued submission keeps the GPU fed: a fixed larger threshold saved the
/// same on the chain but held row kernels back from an idle GPU (softmax -3 to -13%).
fn submit_now(recorded: usize, threads: u64, queued: impl FnOnce() -> bool) -> bool {
    recorded >= MAX_PER_SUBMIT || (threads >= submit_threads() && !(hold() && queued()))
}

/// Whether large batches may be held behind a queued submission ([`submit_now`]); set
/// `LAZULI_SUBMIT_HOLD=0` to submit each at once (to measure the policy).
fn hold() -> bool {
    static H: OnceLock<bool> = OnceLock::new();
    *H.get_or_init(|| std::env::var("LAZULI_SUBMIT_HOLD").map_or(true, |v| v != "0"))
}

/// Bytes of kernel parameters one batch can hold: [`MAX_PER_SUBMIT`] blocks of at most
/// 256 bytes each (the largest block is 144 bytes; offsets are rounded up to the device's
/// storage-offset alignment, at most 256).
const ARENA_BYTES: u64 = MAX_PER_SUBMIT as u64 * 256;

/// How many batches there are. A stream records into lane `index % LANES`: streams that
/// share a lane share an encoder, which is still correct (a batch is an ordered
/// recording), and the lanes are a fixed table found without a lock. 64 so that the set
/// of lanes using a buffer is one `u64`.
const LANES: usize = 64;

/// The batch a stream records into (see [`LANES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lane(u8);

impl Lane {
    /// The lane of `stream`.
    pub(crate) fn of(stream: &Stream) -> Lane {
        Lane((stream.index as usize % LANES) as u8)
    }

    /// This lane's bit in a [`GpuBuffer::users`] set.
    pub(crate) fn bit(self) -> u64 {
        1 << self.0
    }

    /// The lanes of a users set, lowest first: one step per lane in the set (the pool
    /// asks this for every allocation, usually of an empty set).
    pub(crate) fn all_in(mut set: u64) -> impl Iterator<Item = Lane> {
        std::iter::from_fn(move || {
            (set != 0).then(|| {
                let i = set.trailing_zeros() as u8;
                set &= set - 1;
                Lane(i)
            })
        })
    }
}

struct Batch {
    encoder: Option<wgpu::CommandEncoder>,
    /// The parameter blocks of the batch being recorded: one buffer, mapped at creation,
    /// each dispatch writing its block at `used` and binding that range. It is unmapped
    /// just before the batch is submitted, so one buffer (and one copy) per submit
    /// replaces a mapped buffer per dispatch. Created with the encoder. (One persistent
    /// arena written with `Queue::write_buffer` per submit was tried and reverted: on an
    /// H200, after a loop of tiny read-backs and a 256 MB transfer, every submit and
    /// poll then took about 2 ms, and a synchronized 1024^3 matmul ran at 0.66 TFLOP/s
    /// instead of 15-17. A mappable arena per batch, `MAPPABLE_PRIMARY_BUFFERS`, written in
    /// place without wgpu's staging copy, saved 4 us of GPU idle per submit on an H100 but
    /// showed the same collapse after the 256 MB transfer: 0.63 TFLOP/s; reverted too,
    /// BENCHMARKS.md session 15.)
    arena: Option<wgpu::Buffer>,
    /// Bytes of `arena` written so far.
    used: u64,
    recorded: usize,
    /// Threads of the kernels recorded so far (see [`submit_now`]).
    threads: u64,
    in_flight: VecDeque<wgpu::SubmissionIndex>,
    /// The batch's kernel timestamps, with timing on (see `timing`). Made with the
    /// encoder.
    stamps: Option<Stamps>,
}

impl Batch {
    const EMPTY: Batch = Batch {
        encoder: None,
        arena: None,
        used: 0,
        recorded: 0,
        threads: 0,
        in_flight: VecDeque::new(),
        stamps: None,
    };

    /// Counts one more recorded command (and publishes the count, see [`PENDING`]).
    fn count(&mut self, lane: Lane) {
        self.recorded += 1;
        PENDING[lane.0 as usize].store(self.recorded, Ordering::Release);
    }

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
            self.stamps = Stamps::new(ctx);
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

/// The batches, one per lane. A static is never dropped, so the encoders outlive every
/// thread that might still record at exit, like the device they record for.
static BATCHES: [Mutex<Batch>; LANES] = [const { Mutex::new(Batch::EMPTY) }; LANES];

/// The latest submission of any lane: the queue runs in order, so once it is done
/// everything submitted is (for [`wait_idle`] and [`synchronize_all`]). Written inside
/// the poll lock, next to the submit.
static LAST: Mutex<Option<wgpu::SubmissionIndex>> = Mutex::new(None);

/// Each lane's count of recorded, unsubmitted commands, readable without its lock: set
/// under the lock, and reset only after the submit, so a reader that sees 0 knows every
/// command the lane recorded before is in the queue.
static PENDING: [AtomicUsize; LANES] = [const { AtomicUsize::new(0) }; LANES];

/// True if no lane of `set` has unsubmitted commands.
pub(crate) fn clean(set: u64) -> bool {
    Lane::all_in(set).all(|l| PENDING[l.0 as usize].load(Ordering::Acquire) == 0)
}

fn batch(lane: Lane) -> MutexGuard<'static, Batch> {
    // A kernel that panicked while recording (eval catches it) leaves the lock poisoned;
    // the batch itself is still consistent (an encoder and a count).
    BATCHES[lane.0 as usize].lock().unwrap_or_else(|e| e.into_inner())
}

fn last() -> Option<wgpu::SubmissionIndex> {
    LAST.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Makes commands `lane` records next, touching `buffers`, safe to run after every other
/// lane's: a buffer another lane wrote has that lane submitted first (the write is
/// recorded there, before the buffer was handed out), and every buffer remembers that
/// `lane` used it, for reuse from the pool.
pub(crate) fn order<'b>(lane: Lane, buffers: impl IntoIterator<Item = &'b GpuBuffer>) -> Result<()> {
    for b in buffers {
        b.users.fetch_or(lane.bit(), Ordering::Relaxed);
        if b.lane != lane && !clean(b.lane.bit()) {
            submit(b.lane)?;
        }
    }
    Ok(())
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

/// Records commands into `lane`'s batch; `buffers` are those the commands use (see
/// [`order`]).
///
/// No error scope per command: errors of recording (none are expected; they would be
/// bugs) reach the device's uncaptured-error handler at once, on this thread, and
/// [`Context::check`] after recording returns them; whatever slips through surfaces at
/// `finish`/`submit`, which run inside one pair of scopes per batch.
pub(crate) fn record(
    lane: Lane,
    what: &str,
    buffers: &[&GpuBuffer],
    f: impl FnOnce(&mut wgpu::CommandEncoder),
) -> Result<()> {
    let ctx = context()?;
    ctx.check_lost()?;
    order(lane, buffers.iter().copied())?;
    let mut b = batch(lane);
    f(b.encoder(ctx));
    // Counted before the check: an error (possibly another thread's, the check reads the
    // whole device's) must not leave a recorded command uncounted, or the lane would look
    // clean to the pool while it still holds that command.
    b.count(lane);
    ctx.check().map_err(|e| Error::Gpu(format!("{what}: {e}")))?;
    if submit_now(b.recorded, b.threads, || queued(ctx, &b)) {
        submit_locked(ctx, lane, &mut b)?;
    }
    Ok(())
}

/// Submits `lane`'s batch, if it has one, and returns the index of its latest submission.
pub(crate) fn flush(lane: Lane) -> Result<Option<wgpu::SubmissionIndex>> {
    let ctx = context()?;
    let mut b = batch(lane);
    submit_locked(ctx, lane, &mut b)?;
    Ok(b.in_flight.back().cloned())
}

/// Submits `lane`'s batch, if it has one.
fn submit(lane: Lane) -> Result<()> {
    flush(lane).map(drop)
}

/// Whether the lane's latest submission still waits behind its previous one: true when
/// the one before the latest has not finished (the queue runs in order). One
/// non-blocking [`poll_raw`], which leaves the device's uncaptured errors to the caller's
/// next [`Context::check`] (`poll_for` would take them, and this answer has no room for
/// them); a failed poll answers false, so the batch is submitted and the submit reports.
fn queued(ctx: &Context, b: &Batch) -> bool {
    let n = b.in_flight.len();
    if n < 2 {
        return false;
    }
    matches!(poll_raw(ctx, &b.in_flight[n - 2], Duration::ZERO), Ok(Err(wgpu::PollError::Timeout)))
}

/// Commands `stream`'s lane has recorded and not yet submitted (0 for a stream of
/// another device, which records nothing here).
pub(crate) fn unsubmitted(stream: &Stream) -> usize {
    if stream.device.kind != crate::stream::DeviceKind::Gpu {
        return 0;
    }
    PENDING[Lane::of(stream).0 as usize].load(Ordering::Acquire)
}

fn submit_locked(ctx: &Context, lane: Lane, b: &mut Batch) -> Result<()> {
    let Some(mut enc) = b.encoder.take() else { return Ok(()) };
    b.recorded = 0;
    b.threads = 0;
    let arena = b.arena.take();
    let stamps = b.stamps.take().and_then(|s| s.resolve(ctx, &mut enc));
    let submitted = ctx.check_lost().and_then(|()| {
        if let Some(arena) = arena {
            // The blocks written so far become visible to the batch's dispatches (wgpu
            // copies them in before the batch's commands); the buffer is freed once the
            // submission is done with it.
            arena.unmap();
        }
        let _g = poll_lock();
        let idx = ctx.scoped("submit", || Ok(ctx.queue.submit([enc.finish()])))?;
        *LAST.lock().unwrap_or_else(|e| e.into_inner()) = Some(idx.clone());
        Ok(idx)
    });
    // Submitted, or dropped with the error: either way nothing of the lane waits.
    PENDING[lane.0 as usize].store(0, Ordering::Release);
    let idx = submitted?;
    if let Some(stamps) = stamps {
        stamps.submitted(ctx);
    }
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
        if poll_for(ctx, idx, left.min(WAIT_SLICE))? {
            return Ok(());
        }
        // Lets a thread waiting for the poll lock (to submit) take it between slices.
        std::thread::yield_now();
        ctx.check()?;
        if done() {
            return Ok(());
        }
    }
}

/// The longest one blocking poll of [`wait`] lasts. A poll holds the poll lock, which
/// every submit needs: a lane submitting while another lane's thread waits is held up
/// about this long (with 500 ms slices, up to 500 ms). Completion wakes the poll at once,
/// so a short slice costs no latency.
const WAIT_SLICE: Duration = Duration::from_millis(2);

/// Waits at most `step` for submission `idx`; true if it is done (the device checked).
fn poll_for(ctx: &Context, idx: &wgpu::SubmissionIndex, step: Duration) -> Result<bool> {
    match poll_raw(ctx, idx, step)? {
        Ok(_) => {
            ctx.check()?;
            Ok(true)
        }
        Err(wgpu::PollError::Timeout) => Ok(false),
        Err(e) => Err(Error::Gpu(format!("{}: waiting for the GPU: {e}", ctx.description))),
    }
}

/// One poll for submission `idx`, at most `step` long, under the poll lock; a wgpu panic
/// comes back as `Err`. The device's uncaptured errors are left for the caller.
fn poll_raw(
    ctx: &Context,
    idx: &wgpu::SubmissionIndex,
    step: Duration,
) -> Result<std::result::Result<wgpu::PollStatus, wgpu::PollError>> {
    let _g = poll_lock();
    let wait = wgpu::PollType::Wait { submission_index: Some(idx.clone()), timeout: Some(step) };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ctx.device.poll(wait)))
        .map_err(|_| Error::Gpu(format!("{}: wgpu panicked while polling", ctx.description)))
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

/// Submits `stream`'s lane and waits for it (and, the queue being in order, for whatever
/// was submitted before it); other lanes' recorded work stays unsubmitted.
pub(crate) fn synchronize(stream: &Stream) -> Result<()> {
    if let Some(idx) = flush(Lane::of(stream))? {
        wait(context()?, &idx, || false)?;
    }
    Ok(())
}

/// Submits every lane and waits for all of it.
pub(crate) fn synchronize_all() -> Result<()> {
    for lane in Lane::all_in(u64::MAX) {
        submit(lane)?;
    }
    if let Some(idx) = last() {
        wait(context()?, &idx, || false)?;
    }
    Ok(())
}

/// One kernel launch: the pipeline, its parameters (binding 0) and buffers by binding.
///
/// Per launch: the parameter block is written into the batch's arena (no buffer of its
/// own), one bind group is made, one compute pass recorded; one lock (the lane's batch)
/// is taken, plus one per buffer another lane wrote (see [`order`]), and no error scope
/// (see [`record`]).
pub(crate) fn dispatch<P: Params>(
    stream: &Stream,
    pipeline: &wgpu::ComputePipeline,
    params: &P,
    buffers: &[(u32, &GpuBuffer)],
    groups: [u32; 3],
) -> Result<()> {
    if groups.contains(&0) {
        return Ok(());
    }
    let ctx = context()?;
    ctx.check_lost()?;
    let lane = Lane::of(stream);
    let data: &[u8] = bytemuck::cast_slice(words(params));
    let len = (data.len() as u64).max(4);
    let align = u64::from(ctx.limits.min_storage_buffer_offset_alignment.max(4));
    let layout = pipeline.get_bind_group_layout(0);
    order(lane, buffers.iter().map(|&(_, b)| b))?;
    let mut b = batch(lane);
    if b.encoder.is_some() && b.used + len > ARENA_BYTES {
        submit_locked(ctx, lane, &mut b)?;
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
        let Batch { encoder, stamps, .. } = &mut *b;
        let enc = encoder.as_mut().expect("made above");
        let timestamp_writes = stamps.as_mut().and_then(|s| s.next(pipeline));
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes });
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(groups[0], groups[1], groups[2]);
    }
    // Counted before the check, as in `record`.
    b.count(lane);
    let threads = groups.iter().fold(256u64, |t, &g| t.saturating_mul(u64::from(g)));
    b.threads = b.threads.saturating_add(threads);
    ctx.check().map_err(|e| Error::Gpu(format!("dispatch: {e}")))?;
    if submit_now(b.recorded, b.threads, || queued(ctx, &b)) {
        submit_locked(ctx, lane, &mut b)?;
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
    stream: &Stream,
    pipeline: &wgpu::ComputePipeline,
    params: &P,
    buffers: &[(u32, &GpuBuffer)],
    threads: usize,
) -> Result<()> {
    if threads == 0 {
        return Ok(());
    }
    dispatch(stream, pipeline, params, buffers, grid(context()?, threads)?)
}

/// Copies `bytes` (rounded up to 4) from one buffer to another, in `stream`'s order.
pub(crate) fn copy(stream: &Stream, src: &GpuBuffer, dst: &GpuBuffer, bytes: u64) -> Result<()> {
    let n = super::buffer::align4(bytes).min(src.raw().size()).min(dst.raw().size());
    record(Lane::of(stream), "copy", &[src, dst], |enc| enc.copy_buffer_to_buffer(src.raw(), 0, dst.raw(), 0, n))
}

/// Waits at most `limit` for the submissions made so far, without submitting anything
/// new; true once idle (or when there is no device). For the exit hook and `shutdown`.
pub(crate) fn wait_idle(limit: Duration) -> bool {
    let Ok(ctx) = context() else { return true };
    let deadline = Instant::now() + limit;
    // try_lock: a thread submitting right now gets until the deadline to finish.
    let last = loop {
        match LAST.try_lock() {
            Ok(l) => break l.clone(),
            Err(std::sync::TryLockError::Poisoned(p)) => break p.into_inner().clone(),
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

#[cfg(test)]
mod tests {
    use super::{Lane, MAX_PER_SUBMIT, SUBMIT_THREADS, submit_now};

    #[test]
    fn batches_go_at_a_command_count_or_a_thread_count() {
        // Tiny kernels share a submit until the command cap.
        let idle = || false;
        assert!(!submit_now(1, 256, idle));
        assert!(!submit_now(MAX_PER_SUBMIT - 1, 256 * (MAX_PER_SUBMIT as u64 - 1), idle));
        assert!(submit_now(MAX_PER_SUBMIT, 256 * MAX_PER_SUBMIT as u64, idle));
        // One large kernel goes at once (64M f32, four a thread: 16M threads).
        assert!(submit_now(1, 16 << 20, idle));
        assert!(submit_now(3, SUBMIT_THREADS, idle));
        assert!(!submit_now(3, SUBMIT_THREADS - 1, idle));
    }

    #[test]
    fn large_batches_wait_behind_a_queued_submission_up_to_the_command_cap() {
        let queued = || true;
        assert!(!submit_now(1, 16 << 20, queued));
        assert!(!submit_now(MAX_PER_SUBMIT - 1, u64::MAX, queued));
        assert!(submit_now(MAX_PER_SUBMIT, 16 << 20, queued));
        // Small batches never ask.
        assert!(!submit_now(1, 256, || panic!("asked for a small batch")));
    }

    #[test]
    fn lanes_of_a_set_are_its_bits() {
        let lanes = |set| Lane::all_in(set).map(|l| l.0).collect::<Vec<_>>();
        assert_eq!(lanes(0), Vec::<u8>::new());
        assert_eq!(lanes(0b1011), vec![0, 1, 3]);
        assert_eq!(lanes(1 << 63), vec![63]);
        assert_eq!(lanes(u64::MAX).len(), 64);
        assert!(Lane::all_in(Lane(5).bit()).eq([Lane(5)]));
    }
}
