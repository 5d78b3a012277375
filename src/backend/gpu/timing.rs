//! Time on the GPU per kernel, from timestamp queries: a profiler, on when
//! `LAZULI_GPU_TIMING=1` and the adapter offers `TIMESTAMP_QUERY`.
//!
//! Why: an eval's wall-clock time mixes the host's recording and submitting with the
//! kernels, and NVIDIA's profilers do not see kernels that reach the driver through
//! Vulkan (`ncu` found none, BENCHMARKS.md session 14). Timestamps written at the start
//! and end of each kernel's compute pass time the kernels alone, on any backend.
//!
//! Cost: each batch resolves its timestamps into a small buffer read back when the batch
//! is done, without waiting for it, and each kernel's pass has two timestamp writes; the
//! kernels' durations are what they would be untimed. Copies are not timed (only kernels).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::context::Context;
use crate::backend::{KernelTime, KernelTimes};

/// Whether `LAZULI_GPU_TIMING=1` asks for timing (read once, when the device is made).
pub(crate) fn wanted() -> bool {
    std::env::var("LAZULI_GPU_TIMING").is_ok_and(|v| v == "1")
}

/// Kernels timed per batch: a batch is submitted at 64 commands
/// (`encoder::MAX_PER_SUBMIT`); a batch with more dispatches leaves the rest untimed.
const PER_BATCH: u32 = 64;

/// Each pipeline's name for the report. Filled only with timing on; a static, never
/// dropped, like the pipelines it names (they are leaked with the device).
fn names() -> &'static Mutex<HashMap<wgpu::ComputePipeline, Arc<str>>> {
    static N: OnceLock<Mutex<HashMap<wgpu::ComputePipeline, Arc<str>>>> = OnceLock::new();
    N.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Gives `pipeline` the name `name()` in the report (only with timing on: the name is
/// not built otherwise).
pub(crate) fn name(ctx: &Context, pipeline: &wgpu::ComputePipeline, name: impl FnOnce() -> String) {
    if ctx.timing {
        names().lock().unwrap_or_else(|e| e.into_inner()).insert(pipeline.clone(), name().into());
    }
}

fn name_of(pipeline: &wgpu::ComputePipeline) -> Arc<str> {
    let names = names().lock().unwrap_or_else(|e| e.into_inner());
    names.get(pipeline).cloned().unwrap_or_else(|| "(unnamed)".into())
}

/// What has been measured since the last [`reset`]. A static: submits on any thread add
/// to it, and it is never dropped.
static TOTALS: Mutex<Totals> = Mutex::new(Totals::EMPTY);

struct Totals {
    /// (name, launches, nanoseconds); few names, so a list.
    kernels: Vec<(Arc<str>, u64, f64)>,
    submits: u64,
    busy_ns: f64,
    /// GPU ticks between one timed batch's last kernel end and the next one's first
    /// start, summed; and the last end seen.
    idle_ticks: u64,
    last_end: Option<u64>,
}

impl Totals {
    const EMPTY: Totals = Totals { kernels: Vec::new(), submits: 0, busy_ns: 0.0, idle_ticks: 0, last_end: None };
}

/// The measured kernel times of the batches submitted so far (waiting for those still
/// running), longest total first; `None` with timing off.
pub(crate) fn report(ctx: &Context) -> Option<KernelTimes> {
    if !ctx.timing {
        return None;
    }
    harvest_all(ctx);
    let t = TOTALS.lock().unwrap_or_else(|e| e.into_inner());
    let ns = |v: f64| Duration::from_nanos(v.max(0.0) as u64);
    let mut kernels: Vec<KernelTime> = t
        .kernels
        .iter()
        .map(|(name, launches, total)| KernelTime { name: name.to_string(), launches: *launches, total: ns(*total) })
        .collect();
    kernels.sort_by_key(|k| std::cmp::Reverse(k.total));
    let idle = ns(t.idle_ticks as f64 * f64::from(ctx.queue.get_timestamp_period()));
    Some(KernelTimes { kernels, submits: t.submits, busy: ns(t.busy_ns), idle })
}

/// Forgets what has been measured, batches still running included.
pub(crate) fn reset() {
    // Dropping a buffer whose map is pending runs its callback with an error: harmless.
    IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let mut t = TOTALS.lock().unwrap_or_else(|e| e.into_inner());
    *t = Totals::EMPTY;
}

/// The timestamps of one batch: two per kernel (start and end of its pass).
pub(crate) struct Stamps {
    set: wgpu::QuerySet,
    names: Vec<Arc<str>>,
}

impl Stamps {
    /// Room for a batch's kernels; `None` with timing off.
    pub(crate) fn new(ctx: &Context) -> Option<Stamps> {
        ctx.timing.then(|| Stamps {
            set: ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("lazuli timing"),
                ty: wgpu::QueryType::Timestamp,
                count: 2 * PER_BATCH,
            }),
            names: Vec::new(),
        })
    }

    /// The timestamp writes for the pass of the next kernel, which runs `pipeline`;
    /// `None` once the batch has timed [`PER_BATCH`] kernels.
    pub(crate) fn next(&mut self, pipeline: &wgpu::ComputePipeline) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        let i = self.names.len() as u32;
        if i >= PER_BATCH {
            return None;
        }
        self.names.push(name_of(pipeline));
        Some(wgpu::ComputePassTimestampWrites {
            query_set: &self.set,
            beginning_of_pass_write_index: Some(2 * i),
            end_of_pass_write_index: Some(2 * i + 1),
        })
    }

    /// Records the copy of the timestamps into a buffer the host can read, at the end of
    /// the batch; `None` if no kernel was timed.
    pub(crate) fn resolve(self, ctx: &Context, enc: &mut wgpu::CommandEncoder) -> Option<Pending> {
        if self.names.is_empty() {
            return None;
        }
        let n = 2 * self.names.len() as u32;
        let bytes = u64::from(n) * 8;
        let buffer = |usage| {
            ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("lazuli timing"),
                size: bytes,
                usage,
                mapped_at_creation: false,
            })
        };
        let resolved = buffer(wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC);
        let read = buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
        enc.resolve_query_set(&self.set, 0..n, &resolved, 0);
        enc.copy_buffer_to_buffer(&resolved, 0, &read, 0, bytes);
        Some(Pending { read, names: self.names })
    }
}

/// A submitted batch's timestamps, on their way back.
pub(crate) struct Pending {
    read: wgpu::Buffer,
    names: Vec<Arc<str>>,
}

/// Where a batch's timestamp read-back is: its map callback sets [`MAPPED`] or [`FAILED`]
/// (after a device loss, say: the batch is then dropped, not waited for).
const WAITING: u8 = 0;
const MAPPED: u8 = 1;
const FAILED: u8 = 2;

/// One queued read-back: the batch, its map state, and its place in submission order.
struct Queued {
    batch: Pending,
    state: Arc<AtomicU8>,
    seq: u64,
}

/// Submitted batches' timestamps not yet added to [`TOTALS`]. A static, never dropped:
/// the map callbacks own their states, so one that fires at exit touches nothing freed.
/// Lock order: this, then [`TOTALS`].
static IN_FLIGHT: Mutex<VecDeque<Queued>> = Mutex::new(VecDeque::new());

/// The next [`Queued::seq`].
static NEXT_SEQ: AtomicU64 = AtomicU64::new(0);

impl Pending {
    /// Called once the batch is submitted: asks for the timestamps (they map when the
    /// batch is done) and adds those of earlier batches that have come back. Nothing
    /// waits here, so the GPU runs as it would untimed.
    pub(crate) fn submitted(self, ctx: &Context) {
        let state = Arc::new(AtomicU8::new(WAITING));
        let flag = state.clone();
        self.read.slice(..).map_async(wgpu::MapMode::Read, move |r| {
            flag.store(if r.is_ok() { MAPPED } else { FAILED }, Ordering::Release)
        });
        let mut q = IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner());
        q.push_back(Queued { batch: self, state, seq: NEXT_SEQ.fetch_add(1, Ordering::Relaxed) });
        harvest(ctx, &mut q);
    }

    /// The batch's timestamps (start and end of each kernel, in ticks).
    fn ticks(self) -> Option<(Vec<Arc<str>>, Vec<u64>)> {
        let ticks: Vec<u64> = match self.read.slice(..).get_mapped_range() {
            Ok(view) => bytemuck::pod_collect_to_vec(&view),
            Err(e) => {
                log::warn!("gpu timing: a batch's timestamps could not be read ({e})");
                return None;
            }
        };
        self.read.unmap();
        Some((self.names, ticks))
    }
}

impl Totals {
    /// Adds one batch's kernels, its busy span and the idle time since the batch before.
    fn add(&mut self, names: Vec<Arc<str>>, ticks: &[u64], period: f64) {
        for (name, pair) in names.into_iter().zip(ticks.chunks_exact(2)) {
            let ns = pair[1].saturating_sub(pair[0]) as f64 * period;
            match self.kernels.iter_mut().find(|k| k.0 == name) {
                Some(k) => {
                    k.1 += 1;
                    k.2 += ns;
                }
                None => self.kernels.push((name, 1, ns)),
            }
        }
        let first = ticks.iter().step_by(2).min().copied().unwrap_or(0);
        let last = ticks.iter().skip(1).step_by(2).max().copied().unwrap_or(0);
        self.submits += 1;
        self.busy_ns += last.saturating_sub(first) as f64 * period;
        // A batch of another lane can come back out of queue order: it adds no idle time
        // and does not move the last end back.
        if let Some(prev) = self.last_end {
            self.idle_ticks += first.saturating_sub(prev);
        }
        self.last_end = Some(self.last_end.map_or(last, |prev| prev.max(last)));
    }
}

/// Adds the timestamps that have come back to the totals (in the order the batches ran)
/// and drops failed read-backs; the others stay queued.
fn harvest(ctx: &Context, q: &mut VecDeque<Queued>) {
    if q.iter().all(|e| e.state.load(Ordering::Acquire) == WAITING) {
        return;
    }
    let mut done = Vec::new();
    let mut left = VecDeque::with_capacity(q.len());
    for e in q.drain(..) {
        match e.state.load(Ordering::Acquire) {
            MAPPED => done.extend(e.batch.ticks()),
            FAILED => log::debug!("gpu timing: a batch's timestamps did not map; left out"),
            _ => left.push_back(e),
        }
    }
    *q = left;
    done.sort_by_key(|(_, ticks)| ticks.first().copied().unwrap_or(0));
    let period = f64::from(ctx.queue.get_timestamp_period());
    let mut t = TOTALS.lock().unwrap_or_else(|e| e.into_inner());
    for (names, ticks) in done {
        t.add(names, &ticks, period);
    }
}

/// Waits (bounded by the GPU timeout) until the timestamps of every batch submitted
/// before the call are in the totals (or failed); later submissions are not waited for.
fn harvest_all(ctx: &Context) {
    let upto = NEXT_SEQ.load(Ordering::Relaxed);
    let deadline = Instant::now() + super::encoder::timeout();
    loop {
        {
            let mut q = IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner());
            harvest(ctx, &mut q);
            if q.iter().all(|e| e.seq >= upto) {
                return;
            }
        }
        if Instant::now() >= deadline {
            log::warn!("gpu timing: some batches' timestamps did not come back in time; left out");
            return;
        }
        // Runs the map callbacks of finished batches.
        super::encoder::poll_once(ctx);
        std::thread::sleep(Duration::from_micros(50));
    }
}
