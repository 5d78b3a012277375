//! Kernel fusion: at every [`eval`](crate::eval()), maximal regions of elementwise
//! primitives run as one generated kernel, without temporaries between them.
//!
//! The pass sits between the topological order and execution. A region grows
//! from a root (an elementwise primitive, or a reduction with an elementwise prologue)
//! towards its inputs, absorbing an input node only when
//! - it is pending, elementwise, on the root's stream, of the root's shape (a region
//!   computes every value once per output element; broadcast happens only at its inputs),
//!   or, where the backend has [`Limits::row_regions`], a reduction of a value of the
//!   region's shape that later members read (softmax, layer_norm: one kernel run row by
//!   row, [`Step::Reduce`]) or a member of a shape that broadcasts to the region's,
//! - no node of this eval outside the region consumes it, and it was not built in a
//!   transform's retaining scope (`grad` may read it later),
//! - the backend's [`Fuser`] accepts it, and the region stays within [`Limits`].
//!
//! A node that fails any test is *written out*: it runs on its own (or roots its own region)
//! and the region reads its buffer. A node that passes them but that something else still
//! holds (a user handle, such as the temporaries of `a.mul(&b)?.exp()?.eval()` or a named
//! intermediate; or a node not being evaluated) is absorbed all the same and written out
//! by the region's kernel as an extra output ([`Program::extra_outputs`]): one pass, one
//! more write, instead of a region boundary. Reduction regions take no extra outputs. Scalar constants (pending `Full` nodes of one element)
//! are folded into the region as parameters, whoever else holds them.
//!
//! A region's [`Program`] is what a backend compiles: a list of SSA [`Step`]s over the
//! region's inputs. The GPU backend turns it into one WGSL kernel, cached by the program's
//! structure; the CPU backend runs it as one loop over chunks. A region whose kernel
//! fails to build runs unfused, with a log line: fusion may cost speed, never results.
//!
//! Switches: `LAZULI_NO_FUSION=1` (or [`set_enabled`]`(false)`) turns fusion off;
//! `LAZULI_DEBUG_FUSION=1` prints every region on stderr.

mod plan;
mod program;

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

pub use plan::{Limits, programs};
pub(crate) use plan::{Plan, Region, plan, single};
pub use program::{Program, Step};

use crate::backend::{Buffer, Input};
use crate::error::Result;
use crate::primitive::{Meta, Primitive};
use crate::stream::Stream;

/// What a backend implements to run fused regions (see [`crate::backend::Backend::fuser`]).
pub trait Fuser: Send + Sync {
    /// Bounds on the regions this backend takes.
    fn limits(&self) -> Limits;
    /// True if `op`, with inputs and output of these metas, may be a step of a region
    /// this backend runs (dtype support, mostly). The planner asks with the node's lock
    /// held (it looks at the primitive in place): an implementation must not evaluate or
    /// lock graph nodes.
    fn accepts(&self, op: &Primitive, inputs: &[&Meta], output: &Meta) -> bool;
    /// Runs the whole region; `inputs` follow [`Program::inputs`]. Returns the main
    /// output, then one buffer per [`Program::extra_outputs`] value, in order.
    fn run(&self, stream: &Stream, program: &Program, inputs: &[Input<'_>]) -> Result<Vec<Buffer>>;
}

// 0 = not read yet, 1 = on, 2 = off. Read once from the environment, then only
// `set_enabled` changes it; an atomic, since every eval on every thread reads it.
static ENABLED: AtomicU8 = AtomicU8::new(0);

thread_local! {
    /// [`with_enabled`]'s override for evals on this thread; `None` follows [`ENABLED`].
    /// Per thread so that one caller comparing fused and unfused runs cannot change what
    /// another thread's evals do meanwhile.
    static OVERRIDE: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
}

/// True when evals on this thread fuse: [`with_enabled`]'s choice inside it, else the
/// process-wide switch (on by default; `LAZULI_NO_FUSION=1` starts the process with it off).
pub fn enabled() -> bool {
    if let Some(on) = OVERRIDE.with(std::cell::Cell::get) {
        return on;
    }
    match ENABLED.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let on = std::env::var_os("LAZULI_NO_FUSION").is_none_or(|v| v.is_empty() || v == "0");
            // Another thread's set_enabled wins over the environment.
            let _ = ENABLED.compare_exchange(0, if on { 1 } else { 2 }, Ordering::Relaxed, Ordering::Relaxed);
            ENABLED.load(Ordering::Relaxed) == 1
        }
    }
}

/// Turns fusion on or off for every later eval in the process (evals already running
/// keep their plan). Results are the same either way, within the tolerance
/// `ARCHITECTURE.md` states for fused float math; off is for comparing and debugging.
pub fn set_enabled(on: bool) {
    ENABLED.store(if on { 1 } else { 2 }, Ordering::Relaxed);
}

/// Runs `f` with fusion turned on or off for the evals this thread runs inside it, leaving
/// other threads and the process-wide [`set_enabled`] switch as they are; the previous
/// choice comes back when `f` returns or panics. For comparing fused and unfused results
/// while other threads evaluate.
///
/// ```
/// let x = lazuli::Array::from_slice(&[1f32, 2.0], &[2])?;
/// let plain = lazuli::fusion::with_enabled(false, || (&x.exp()? * 2.0)?.to_vec::<f32>())?;
/// assert_eq!(plain.len(), 2);
/// # Ok::<(), lazuli::Error>(())
/// ```
pub fn with_enabled<R>(on: bool, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<bool>);
    impl Drop for Restore {
        fn drop(&mut self) {
            OVERRIDE.with(|o| o.set(self.0));
        }
    }
    let _restore = Restore(OVERRIDE.with(|o| o.replace(Some(on))));
    f()
}

/// `LAZULI_DEBUG_FUSION=1`: print each region's program on stderr.
pub(crate) fn debug() -> bool {
    static D: OnceLock<bool> = OnceLock::new();
    *D.get_or_init(|| std::env::var_os("LAZULI_DEBUG_FUSION").is_some_and(|v| !v.is_empty() && v != "0"))
}

static REGIONS_RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

thread_local! {
    /// This thread's share of [`REGIONS_RUN`] (exact where other threads evaluate too).
    static REGIONS_HERE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

pub(crate) fn count_region() {
    REGIONS_RUN.fetch_add(1, Ordering::Relaxed);
    REGIONS_HERE.with(|c| c.set(c.get() + 1));
}

/// How many fused regions `eval` calls on this thread have run: [`regions_run`] without
/// other threads' work, like [`crate::primitives_run_here`].
pub fn regions_run_here() -> u64 {
    REGIONS_HERE.with(|c| c.get())
}

/// How many fused regions this process has run (each one kernel in place of several):
/// for tests and profiling, like [`crate::primitives_run`].
pub fn regions_run() -> u64 {
    REGIONS_RUN.load(Ordering::Relaxed)
}
