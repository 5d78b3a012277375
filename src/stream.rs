//! Devices, streams and the generation-tagged stream registry.
//!
//! A [`Stream`] is a plain `Copy` value: device, index into the registry and the
//! generation the registry slot had when the stream was handed out. Closing a stream,
//! disabling its device or calling [`crate::shutdown`] bumps the slot's generation, so
//! every copy of the old value becomes stale at once and any work on it is refused
//! with [`Error::StreamClosed`] before it reaches a device (MLX's hole: a stream taken
//! before shutdown kept submitting).

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};

use crate::error::{Error, Result};

/// The family of backend a device belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// The host CPU.
    Cpu,
    /// A GPU through wgpu (Vulkan, Metal, DX12).
    Gpu,
    /// A backend registered at run time with [`crate::backend::register_backend`].
    Custom(u16),
}

/// A device: a backend kind and an index within it. Cheap to copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Device {
    /// Which backend runs the work.
    pub kind: DeviceKind,
    /// Which device of that backend (GPU ordinal).
    pub index: u32,
}

impl Device {
    /// The host CPU.
    pub const fn cpu() -> Device {
        Device { kind: DeviceKind::Cpu, index: 0 }
    }
    /// The `i`-th GPU adapter wgpu offers. Only `gpu(0)` exists today; others give an
    /// `Err` when first used, as every GPU does in a build without the `gpu` feature.
    pub const fn gpu(i: u32) -> Device {
        Device { kind: DeviceKind::Gpu, index: i }
    }
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            DeviceKind::Cpu => write!(f, "cpu"),
            DeviceKind::Gpu => write!(f, "gpu({})", self.index),
            DeviceKind::Custom(id) => write!(f, "custom{id}({})", self.index),
        }
    }
}

/// Parses `cpu`, `gpu` (GPU 0) and `gpu:N` / `gpu(N)`, so command lines can take a device;
/// anything else is an `Err(Error::Device)` listing what is accepted.
///
/// ```
/// use lazuli::Device;
/// assert_eq!("gpu:1".parse::<Device>()?, Device::gpu(1));
/// assert_eq!("cpu".parse::<Device>()?, Device::cpu());
/// assert!("tpu".parse::<Device>().is_err());
/// # Ok::<(), lazuli::Error>(())
/// ```
impl std::str::FromStr for Device {
    type Err = Error;
    fn from_str(s: &str) -> Result<Device> {
        let t = s.trim().to_ascii_lowercase();
        let index = t
            .strip_prefix("gpu")
            .map(|rest| rest.trim_start_matches([':', '(']).trim_end_matches(')'))
            .map(|n| if n.is_empty() { Ok(0) } else { n.parse::<u32>() });
        match (t.as_str(), index) {
            ("cpu", _) => Ok(Device::cpu()),
            (_, Some(Ok(i))) => Ok(Device::gpu(i)),
            _ => Err(Error::Device(format!("unknown device {s:?}: expected cpu, gpu or gpu:N"))),
        }
    }
}

/// Where work runs: a device and a slot in the registry. A `Stream` is a value: copies
/// share the registry slot, and all become stale together when the slot's generation
/// moves on.
///
/// # What runs in order, and what concurrently
/// - A node runs on the stream that was current when it was built ([`with_stream`]),
///   whatever device its inputs live on; inputs from another device are copied through
///   host memory when it runs.
/// - Nodes are run by the thread that evaluates them ([`crate::eval()`], a read, or the
///   thread [`crate::async_eval`] starts), once each, inputs before users. Within one
///   evaluation they run one after another, even on different streams. A thread that
///   needs a node another thread is running waits for it.
/// - Evaluations on different threads run concurrently. CPU kernels return when done
///   (large ones split across rayon's threads).
/// - Each GPU stream records into its own command encoder, submitted when it fills or
///   when its results are needed: a read of an array, or [`synchronize`] on the stream,
///   submits and waits for that stream's work only, leaving other streams' recorded
///   work unsubmitted. A GPU node counts as run once its commands are recorded. A GPU
///   consumer on another stream first submits the producer's stream. wgpu gives a
///   device one queue, so submitted work executes in submission order; kernels of two
///   streams overlap only as far as the driver overlaps consecutive work in one queue
///   (BENCHMARKS.md measures it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stream {
    /// The device the stream's work runs on.
    pub device: Device,
    /// Index of the stream's slot in the registry.
    pub index: u32,
    /// The slot's generation when this value was handed out.
    pub generation: u64,
}

impl Stream {
    /// `Ok` while this stream may take work; [`Error::StreamClosed`] once it was closed,
    /// its device disabled or the library shut down; [`Error::ShutDown`] once the process
    /// has begun to exit.
    pub fn check(&self) -> Result<()> {
        registry().check(self)
    }

    /// Waits until all work submitted on this stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        synchronize(self)
    }
}

/// One registry slot. Never removed, so an index stays meaningful for the life of the
/// process; only its generation moves.
struct Slot {
    device: Device,
    generation: AtomicU64,
    /// Async evaluations queued or running on this stream.
    in_flight: AtomicUsize,
}

/// The registry. Lives in a leaked static (never dropped): callbacks from GPU driver
/// threads may consult it during process exit, after Rust statics with destructors
/// would be gone.
pub(crate) struct Registry {
    /// Append-only; the lock is held only to push or clone out a slot reference.
    slots: Mutex<Vec<&'static Slot>>,
    /// Default stream slot per device, made on first use.
    defaults: Mutex<Vec<(Device, u32)>>,
    /// Devices disabled with [`disable_device`].
    disabled: Mutex<Vec<Device>>,
    /// Set once the process has begun to exit; never cleared.
    exiting: AtomicBool,
    /// Signalled when an in-flight count drops.
    idle_lock: Mutex<()>,
    idle: Condvar,
}

pub(crate) fn registry() -> &'static Registry {
    static REG: OnceLock<&'static Registry> = OnceLock::new();
    REG.get_or_init(|| {
        Box::leak(Box::new(Registry {
            slots: Mutex::new(Vec::new()),
            defaults: Mutex::new(Vec::new()),
            disabled: Mutex::new(Vec::new()),
            exiting: AtomicBool::new(false),
            idle_lock: Mutex::new(()),
            idle: Condvar::new(),
        }))
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere must not poison the registry for everyone else.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Registry {
    fn slot(&self, index: u32) -> Option<&'static Slot> {
        thread_local! {
            /// The slot this thread looked up last. Slots are never removed and an index
            /// never names another slot, so a cached reference cannot go stale; every op
            /// built checks its stream here, and the lock cost about 3% of the 1000-op
            /// chain (perf, session 17).
            static LAST: Cell<Option<(u32, &'static Slot)>> = const { Cell::new(None) };
        }
        if let Ok(Some((i, slot))) = LAST.try_with(Cell::get)
            && i == index
        {
            return Some(slot);
        }
        let slot = lock(&self.slots).get(index as usize).copied()?;
        let _ = LAST.try_with(|c| c.set(Some((index, slot))));
        Some(slot)
    }

    pub(crate) fn is_exiting(&self) -> bool {
        self.exiting.load(Ordering::Acquire)
    }

    pub(crate) fn begin_exit(&self) {
        self.exiting.store(true, Ordering::Release);
    }

    fn stale(&self, s: &Stream) -> Error {
        Error::StreamClosed { device: s.device.to_string(), index: s.index, generation: s.generation }
    }

    pub(crate) fn check(&self, s: &Stream) -> Result<()> {
        if self.is_exiting() {
            return Err(Error::ShutDown);
        }
        match self.slot(s.index) {
            Some(slot) if slot.device == s.device && slot.generation.load(Ordering::Acquire) == s.generation => Ok(()),
            _ => Err(self.stale(s)),
        }
    }

    fn new_slot(&self, device: Device) -> Stream {
        let slot: &'static Slot =
            Box::leak(Box::new(Slot { device, generation: AtomicU64::new(1), in_flight: AtomicUsize::new(0) }));
        let mut slots = lock(&self.slots);
        slots.push(slot);
        Stream { device, index: (slots.len() - 1) as u32, generation: 1 }
    }

    fn current(&self, index: u32) -> Stream {
        let slot = self.slot(index).expect("registry slots are never removed");
        Stream { device: slot.device, index, generation: slot.generation.load(Ordering::Acquire) }
    }

    fn ensure_enabled(&self, device: Device) -> Result<()> {
        if self.is_exiting() {
            return Err(Error::ShutDown);
        }
        if lock(&self.disabled).contains(&device) {
            return Err(Error::Device(format!("{device} is disabled; call lazuli::enable_device to use it again")));
        }
        Ok(())
    }

    fn bump_where(&self, pred: impl Fn(&Slot) -> bool) {
        for slot in lock(&self.slots).iter() {
            if pred(slot) {
                slot.generation.fetch_add(1, Ordering::AcqRel);
            }
        }
    }

    pub(crate) fn begin_work(&self, s: &Stream) {
        if let Some(slot) = self.slot(s.index) {
            slot.in_flight.fetch_add(1, Ordering::AcqRel);
        }
    }

    pub(crate) fn end_work(&self, s: &Stream) {
        if let Some(slot) = self.slot(s.index) {
            slot.in_flight.fetch_sub(1, Ordering::AcqRel);
            let _g = lock(&self.idle_lock);
            self.idle.notify_all();
        }
    }

    /// Waits until no async work is in flight on `s` (or on any stream, for `None`),
    /// for at most `timeout`. Returns whether it became idle.
    pub(crate) fn wait_idle(&self, s: Option<&Stream>, timeout: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        let busy = || match s {
            Some(s) => self.slot(s.index).is_some_and(|x| x.in_flight.load(Ordering::Acquire) > 0),
            None => lock(&self.slots).iter().any(|x| x.in_flight.load(Ordering::Acquire) > 0),
        };
        let mut g = lock(&self.idle_lock);
        while busy() {
            let now = std::time::Instant::now();
            if now >= deadline {
                return false;
            }
            // Short waits: a decrement may race with our check of `busy`.
            let wait = (deadline - now).min(std::time::Duration::from_millis(5));
            g = self.idle.wait_timeout(g, wait).unwrap_or_else(|e| e.into_inner()).0;
        }
        true
    }
}

/// The stream that work on `device` goes to when no [`with_stream`] scope says otherwise.
/// After [`crate::shutdown`] or [`close_stream`] on it, this hands out a fresh generation.
pub fn default_stream(device: Device) -> Result<Stream> {
    let reg = registry();
    reg.ensure_enabled(device)?;
    crate::backend::backend_for(device)?;
    let mut defaults = lock(&reg.defaults);
    if let Some(&(_, idx)) = defaults.iter().find(|(d, _)| *d == device) {
        return Ok(reg.current(idx));
    }
    let s = reg.new_slot(device);
    defaults.push((device, s.index));
    Ok(s)
}

/// A new stream on `device`. Errors if the device does not exist or is disabled.
pub fn new_stream(device: Device) -> Result<Stream> {
    let reg = registry();
    reg.ensure_enabled(device)?;
    crate::backend::backend_for(device)?;
    Ok(reg.new_slot(device))
}

/// Closes a stream: every copy of `s` becomes stale, and work on it returns
/// [`Error::StreamClosed`]. Closing a default stream makes [`default_stream`] hand out a
/// fresh generation of it.
pub fn close_stream(s: &Stream) -> Result<()> {
    let reg = registry();
    reg.check(s)?;
    if let Some(slot) = reg.slot(s.index) {
        slot.generation.fetch_add(1, Ordering::AcqRel);
    }
    Ok(())
}

/// Disables a device: all its streams become stale and new ones are refused until
/// [`enable_device`].
pub fn disable_device(device: Device) {
    let reg = registry();
    {
        let mut d = lock(&reg.disabled);
        if !d.contains(&device) {
            d.push(device);
        }
    }
    reg.bump_where(|slot| slot.device == device);
}

/// Allows streams on a device disabled by [`disable_device`] again (new ones only: the
/// old stream values stay stale).
pub fn enable_device(device: Device) {
    lock(&registry().disabled).retain(|d| *d != device);
}

/// Makes every stream taken so far stale. Pending async work finishes or fails; new work
/// on old `Stream` values returns [`Error::StreamClosed`]. New streams (and
/// [`default_stream`]) work afterwards.
pub(crate) fn invalidate_all() {
    registry().bump_where(|_| true);
}

static DEFAULT_DEVICE: AtomicU32 = AtomicU32::new(0);

fn encode(d: Device) -> u32 {
    let kind = match d.kind {
        DeviceKind::Cpu => 0u32,
        DeviceKind::Gpu => 1,
        DeviceKind::Custom(id) => 2 + id as u32,
    };
    (kind << 16) | (d.index & 0xffff)
}

fn decode(v: u32) -> Device {
    let kind = match v >> 16 {
        0 => DeviceKind::Cpu,
        1 => DeviceKind::Gpu,
        k => DeviceKind::Custom((k - 2) as u16),
    };
    Device { kind, index: v & 0xffff }
}

/// The device new work goes to by default (the CPU unless changed).
pub fn default_device() -> Device {
    decode(DEFAULT_DEVICE.load(Ordering::Relaxed))
}

/// Sets the process-wide default device. Checks that the device can be used.
pub fn set_default_device(device: Device) -> Result<()> {
    crate::backend::backend_for(device)?;
    DEFAULT_DEVICE.store(encode(device), Ordering::Relaxed);
    Ok(())
}

thread_local! {
    static SCOPE: RefCell<Vec<Stream>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` with `s` as this thread's default stream: every op built inside records `s`
/// (MLX's `with mx.stream(s)`). Scopes nest; the previous default is restored after `f`,
/// also when `f` panics.
pub fn with_stream<T>(s: &Stream, f: impl FnOnce() -> T) -> T {
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            SCOPE.with(|v| v.borrow_mut().pop());
        }
    }
    SCOPE.with(|v| v.borrow_mut().push(*s));
    let _restore = Restore;
    f()
}

/// The stream an op built now on this thread records when it has no inputs to follow
/// (creation and random ops, `from_slice`): the innermost [`with_stream`] scope's, else
/// the default device's default stream.
pub fn current_stream() -> Result<Stream> {
    match scoped_stream() {
        Some(s) => Ok(s),
        None => default_stream(default_device()),
    }
}

/// Runs `f` on the stream the device rule ([`placement`]) picks for inputs on these
/// streams, so the constants a composite op makes on the way (a scalar operand, the
/// identity of an empty reduction) are made where the op runs, not copied there.
pub(crate) fn following<T>(inputs: impl IntoIterator<Item = Stream>, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let s = placement(inputs)?;
    with_stream(&s, f)
}

/// The innermost [`with_stream`] scope's stream on this thread, if any.
pub(crate) fn scoped_stream() -> Option<Stream> {
    SCOPE.with(|v| v.borrow().last().copied())
}

/// The stream a new node with these inputs' streams records — the device rule:
///
/// 1. inside a [`with_stream`] scope, the scope's stream;
/// 2. else an op follows its inputs: the first input's stream, or, when the inputs sit
///    on several devices, the first input's whose device is not the default device (so
///    a constant made on the default device joins the GPU array it meets, and is copied
///    there once when the op runs);
/// 3. no inputs: [`current_stream`].
///
/// A followed stream that has since been closed (or outlived `shutdown()`) is replaced
/// by its device's current default stream: evaluated data stays usable, as on a read. A
/// scope's closed stream is an error. Whatever it returns has been checked.
pub(crate) fn placement(inputs: impl IntoIterator<Item = Stream>) -> Result<Stream> {
    if let Some(s) = scoped_stream() {
        return s.check().map(|()| s);
    }
    let default = default_device();
    let mut first = None;
    for s in inputs {
        if s.device != default {
            first = Some(s);
            break;
        }
        first.get_or_insert(s);
    }
    match first {
        None => default_stream(default),
        Some(s) if registry().check(&s).is_ok() => Ok(s),
        Some(s) => default_stream(s.device),
    }
}

/// Waits until all work submitted on `s` has finished, including GPU work and
/// evaluations started with [`crate::async_eval`].
pub fn synchronize(s: &Stream) -> Result<()> {
    let _guard = crate::lifecycle::WorkGuard::enter()?;
    let reg = registry();
    reg.check(s)?;
    if !reg.wait_idle(Some(s), std::time::Duration::from_secs(600)) {
        return Err(Error::Device(format!("synchronize on {}: timed out after 600 s", s.device)));
    }
    crate::backend::backend_for(s.device)?.synchronize(s)
}
