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
//!    after every driver step a backend reports ([`driver_step`]: instance, adapter,
//!    device, shader compile), so it runs before the exit handlers drivers register as
//!    they go. It repeats step 1 (for an exit from another thread), then asks every
//!    started backend for its [`ExitPolicy`]: it returns when all say `Return` (the
//!    CPU), or flushes stdout/stderr and `_exit(status)`s when one says `HardExit` (the
//!    GPU once its device creation began: NVIDIA's own exit-time teardown crashed even
//!    with the device idle). `LAZULI_DEBUG_EXIT=1` reports both steps on stderr.
//!
//! Lifecycle knows no backend: it asks each started one through the
//! [`Backend`](crate::backend::Backend) trait (`wait_idle`, `exit_policy`).
//!
//! The device, queue and stream registry live in leaked statics, so nothing lazuli owns
//! is destroyed under a thread that still holds a handle.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::backend::{ExitPolicy, started_backends};
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

/// The strongest exit policy among the backends started so far. Reads only what
/// backends keep in atomics: it runs inside exit, where wgpu cannot be called.
fn exit_policy() -> ExitPolicy {
    started_backends().iter().map(|b| b.exit_policy()).max().unwrap_or(ExitPolicy::Return)
}

fn wait_backends_idle(timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    started_backends().iter().all(|b| b.wait_idle(deadline.saturating_duration_since(Instant::now())))
}

/// For backends: call after every step that may make a driver register exit handlers of
/// its own (instance, adapter and device creation, the first shader compile). Exit
/// handlers run in reverse order of registration, so registering the lifecycle hook
/// again after each step keeps it ahead of the driver's teardown (shared/facts/teardown.md).
pub fn driver_step() {
    install_exit_hook();
}

/// Registers the exit hook (once per call: glibc runs every registration, and all but
/// the first return at once).
fn install_exit_hook() {
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
    registry().begin_exit();
    // After begin_exit: a line printed before it could be followed by work that was
    // still accepted (tests/suite/teardown.rs orders output by this line).
    if std::env::var_os("LAZULI_DEBUG_EXIT").is_some() {
        debug_exit(&format!("lazuli: exit begins: {} threads inside\n", ACTIVE.load(Ordering::SeqCst)));
    }
    let deadline = Instant::now() + EXIT_WAIT;
    while ACTIVE.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// One `LAZULI_DEBUG_EXIT` line, in one write: `eprintln!` writes its pieces one by one,
/// which interleave with other threads' output on a shared pipe.
fn debug_exit(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(line.as_bytes());
}

fn exit_hook(status: i32) {
    if HOOK_RAN.swap(true, Ordering::SeqCst) {
        return;
    }
    if exit_policy() == ExitPolicy::HardExitNow {
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
        debug_exit(&format!("lazuli: exit hook: status {status}, drained\n"));
    }
    if exit_policy() != ExitPolicy::Return {
        // A backend whose driver tears itself down in later exit handlers and library
        // destructors while driver threads may still run (NVIDIA's Vulkan driver crashed
        // so). Our work has drained, so end here, keeping the status
        // (shared/facts/h200-vulkan.md: 20 / 20 clean this way). GPU work still queued is
        // dropped with the process by the kernel driver; we do not wait for it, since
        // wgpu cannot be called here once the main thread's thread-locals are gone.
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
