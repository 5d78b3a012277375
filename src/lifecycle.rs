//! Shutdown and process exit.
//!
//! # What happens at exit
//! When `main` returns or calls `std::process::exit` while other threads are inside
//! lazuli, libc runs exit handlers and then static destructors, while those threads keep
//! running. GPU drivers hold their own exit-time state (lavapipe's LLVM registers
//! destructors at the first shader compile; NVIDIA's driver tears down its threads), and
//! touching a device while that runs crashes the process (see `shared/facts/teardown.md`).
//!
//! lazuli exits in two steps:
//! 1. **Stop and drain** (`quiesce`), in a main-thread thread-local destructor registered
//!    before `main`: glibc runs the exiting thread's thread-local destructors before any
//!    exit handler, so this runs before every driver's exit-time teardown. It marks the
//!    process as exiting (every entry point then returns [`Error::ShutDown`] without
//!    touching a device) and waits, bounded, for threads inside lazuli to leave, device
//!    creation included.
//! 2. **End** (`exit_hook`), a glibc `on_exit` handler registered on first use and again
//!    after every driver step (instance, adapter, device, shader compile), so it runs
//!    before the exit handlers drivers register as they go. It repeats step 1 (for an
//!    exit from another thread), then returns on a CPU-only process, or, once a GPU was
//!    used, flushes stdout/stderr and `_exit(status)`s: NVIDIA's own exit-time teardown
//!    crashed even with the device idle. `LAZULI_DEBUG_EXIT=1` reports both steps on
//!    stderr.
//!
//! The device, queue and stream registry live in leaked statics, so nothing lazuli owns
//! is destroyed under a thread that still holds a handle.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::stream::registry;

/// Threads currently inside an entry point that may touch a device.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// Marks a thread as doing device work; refused once exit has begun. The exit hook
/// waits for every guard to drop.
pub(crate) struct WorkGuard(());

impl WorkGuard {
    pub(crate) fn enter() -> Result<WorkGuard> {
        static HOOKED: std::sync::Once = std::sync::Once::new();
        HOOKED.call_once(install_exit_hook);
        // SeqCst on both sides (here and in `exit_hook`) so that either this thread sees
        // `exiting`, or the hook sees this thread in `ACTIVE` and waits for it.
        ACTIVE.fetch_add(1, Ordering::SeqCst);
        if registry().is_exiting() {
            ACTIVE.fetch_sub(1, Ordering::SeqCst);
            return Err(Error::ShutDown);
        }
        Ok(WorkGuard(()))
    }
}

impl Drop for WorkGuard {
    fn drop(&mut self) {
        ACTIVE.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How long the exit hook waits for work in flight before it gives up and `_exit`s.
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// Waits until a backend's device is idle, for at most the given time; true if idle.
pub type IdleWaiter = fn(Duration) -> bool;

/// Idle waiters of the backends that have started. A plain list behind a mutex: it is
/// only pushed to at backend start and read by the exit hook.
static IDLE_WAITERS: Mutex<Vec<IdleWaiter>> = Mutex::new(Vec::new());

fn waiters() -> Vec<IdleWaiter> {
    IDLE_WAITERS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Called by a backend once it has compiled and run its first kernel: records how to
/// wait for its device, and registers the exit hook again so that it runs before any
/// exit-time destructors the driver registered while compiling.
pub fn backend_ready(idle: IdleWaiter) {
    IDLE_WAITERS.lock().unwrap_or_else(|e| e.into_inner()).push(idle);
    install_exit_hook();
}

/// Set once a GPU device has begun to be created: from then on the exit hook ends the
/// process itself rather than let the driver's exit-time teardown run.
static DEVICE_STARTED: AtomicBool = AtomicBool::new(false);

/// Set while a GPU device is being created.
static DEVICE_CREATING: AtomicBool = AtomicBool::new(false);

/// Called by a GPU backend before it creates its device.
pub(crate) fn device_started() {
    DEVICE_STARTED.store(true, Ordering::SeqCst);
    DEVICE_CREATING.store(true, Ordering::SeqCst);
}

/// Called by a GPU backend once device creation has returned (made or failed).
pub(crate) fn device_created() {
    DEVICE_CREATING.store(false, Ordering::SeqCst);
}

fn wait_backends_idle(timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    waiters().into_iter().all(|w| w(deadline.saturating_duration_since(Instant::now())))
}

/// Registers the exit hook (once per call: glibc runs every registration, and all but
/// the first return at once).
pub(crate) fn install_exit_hook() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // glibc's `on_exit` hands the exit status to the handler (the `libc` crate does
        // not declare it).
        unsafe extern "C" {
            fn on_exit(f: extern "C" fn(libc::c_int, *mut libc::c_void), arg: *mut libc::c_void) -> libc::c_int;
        }
        extern "C" fn hook(status: libc::c_int, _arg: *mut libc::c_void) {
            exit_hook(status);
        }
        // SAFETY: `hook` is a plain function that lives for the whole process.
        unsafe {
            on_exit(hook, std::ptr::null_mut());
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        extern "C" fn hook() {
            exit_hook(0);
        }
        // SAFETY: as above.
        unsafe {
            libc::atexit(hook);
        }
    }
}

static HOOK_RAN: AtomicBool = AtomicBool::new(false);

/// Phase one of exit, first thing in `exit()` on the main thread: glibc runs the exiting
/// thread's thread-local destructors before any exit handler, whatever the registration
/// order. So a main-thread thread-local registered before `main` (below) lets lazuli stop
/// new work and wait for work in flight, device creation included, before a driver's
/// exit handler can tear anything down under it. (Measured on NVIDIA: an exit that
/// landed while another thread was creating the device crashed.) Phase two is the exit
/// hook, which keeps the status.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod main_thread {
    struct Sentinel;

    impl Drop for Sentinel {
        fn drop(&mut self) {
            super::quiesce();
        }
    }

    thread_local! {
        static SENTINEL: Sentinel = const { Sentinel };
    }

    extern "C" fn register() {
        SENTINEL.with(|_| {});
    }

    /// Runs on the main thread before `main`, like a C constructor.
    #[used]
    #[unsafe(link_section = ".init_array")]
    static REGISTER: extern "C" fn() = register;
}

/// Refuses new work and waits (bounded) for work in flight. It runs inside a
/// thread-local destructor, where wgpu cannot be called (it keeps thread-locals of its
/// own), so waiting for the devices is left to the exit hook.
fn quiesce() {
    if std::env::var_os("LAZULI_DEBUG_EXIT").is_some() {
        eprintln!("lazuli: exit begins: {} threads inside", ACTIVE.load(Ordering::SeqCst));
    }
    registry().begin_exit();
    let deadline = Instant::now() + EXIT_WAIT;
    while ACTIVE.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn exit_hook(status: i32) {
    if HOOK_RAN.swap(true, Ordering::SeqCst) {
        return;
    }
    if DEVICE_CREATING.load(Ordering::SeqCst) {
        // Only reachable when step one did not run (exit from another thread): a driver
        // half-way through creating a device is not worth waiting for; it crashed on
        // NVIDIA when exit ran beside it. Nothing of ours is in flight yet.
        flush_and_exit(status);
    }
    // Instant when step one already ran on the main thread.
    quiesce();
    if ACTIVE.load(Ordering::SeqCst) > 0 {
        // Timed out: threads are still inside a device. Do not run teardown under them.
        flush_and_exit(status);
    }
    if std::env::var_os("LAZULI_DEBUG_EXIT").is_some() {
        eprintln!("lazuli: exit hook: status {status}, drained");
    }
    if DEVICE_STARTED.load(Ordering::SeqCst) {
        // A GPU backend ran. Its driver tears itself down in later exit handlers and
        // library destructors while driver threads may still run, which crashed on
        // NVIDIA's Vulkan driver. Our work has drained, so end here, keeping the status
        // (shared/facts/h200-vulkan.md: 20 / 20 clean this way). GPU work still queued
        // is dropped with the process by the kernel driver; we do not wait for it,
        // since wgpu cannot be called here once the main thread's thread-locals are gone.
        flush_and_exit(status);
    }
}

fn flush_and_exit(status: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: `_exit` ends the process at once, running no further handlers or
    // destructors: what we want once a GPU driver's teardown must not run.
    unsafe { libc::_exit(status) }
}

/// True once the process has begun to exit (the exit hook ran).
pub fn is_exiting() -> bool {
    registry().is_exiting()
}

/// Closes every stream taken so far: each `Stream` value handed out before this call
/// becomes stale, and work on it returns [`crate::Error::StreamClosed`] without
/// touching a device. Waits (bounded, 10 s) for in-flight async evaluations and GPU work.
/// New streams, and [`crate::default_stream`], work afterwards.
pub fn shutdown() -> Result<()> {
    crate::stream::invalidate_all();
    let idle = registry().wait_idle(None, Duration::from_secs(10));
    let devices_idle = wait_backends_idle(Duration::from_secs(10));
    if idle && devices_idle { Ok(()) } else { Err(Error::Device("shutdown: work still in flight after 10 s".into())) }
}
