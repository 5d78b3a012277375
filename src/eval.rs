//! Evaluation: topological order without recursion, each node run once, detach after
//! (unless the node was built inside a retaining scope, see `array::retaining`).
//!
//! A node whose backend does not [`support`](crate::backend::Backend::supports) its
//! primitive runs the primitive's decomposition instead, on the same stream.

use arrayvec::ArrayVec;
use foldhash::{HashMap, HashMapExt};
use smallvec::SmallVec;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use crate::array::{Array, Kept, Node, State};
use crate::backend::{Backend, Buffer, Input, backend_for};
use crate::error::{Error, Result};
use crate::fusion::{self, Plan, Region};
use crate::lifecycle::WorkGuard;
use crate::primitive::{Fused, Meta, Primitive, Rules};
use crate::stream::{Stream, registry, with_stream};

/// A node's input buffers, inline up to three (as its inputs are).
type Buffers = SmallVec<[Buffer; 3]>;

static PRIMITIVES_RUN: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's share of [`PRIMITIVES_RUN`]: exact counts in a process where other
    /// threads evaluate too (the test suite is one process).
    static RUN_HERE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many primitives this process has run so far (on every device). For tests of
/// laziness and sharing, and for profiling.
pub fn primitives_run() -> u64 {
    PRIMITIVES_RUN.load(Ordering::Relaxed)
}

/// How many primitives `eval` calls on this thread have run (`async_eval` runs on its
/// workers and is not counted here): [`primitives_run`] without other threads' work.
pub fn primitives_run_here() -> u64 {
    RUN_HERE.with(|c| c.get())
}

/// Counts `n` primitives run.
fn count_run(n: u64) {
    PRIMITIVES_RUN.fetch_add(n, Ordering::Relaxed);
    RUN_HERE.with(|c| c.set(c.get() + n));
}

/// What an eval's walk met: every node reachable from the outputs through pending
/// nodes, numbered as met, and the pending ones in an order that runs inputs before users.
/// The fusion planner works on the numbers (vectors indexed by them) instead of hashing
/// node addresses at every question: it was 2.3k of the 1000-op chain's 6.0k
/// instructions per op that way (callgrind, session 17).
pub(crate) struct Order {
    /// The pending nodes, inputs before users, as indices into `nodes`.
    pub(crate) order: Vec<u32>,
    /// Every node met, by its number. One handle each, which the planner's reference-count
    /// rule counts; [`Order::into_weak`] lets them go before anything runs.
    pub(crate) nodes: Vec<Met>,
}

/// A node the walk met.
pub(crate) struct Met {
    pub(crate) array: Array,
    /// Input slots of pending nodes met naming it (the consumers this eval runs; the
    /// node's other holders are user handles and nodes not being evaluated).
    pub(crate) consumers: u32,
    /// Its inputs' numbers, if it was pending when met and takes at most three (what a
    /// fused step can take; the planner asks nothing of the others).
    pub(crate) inputs: Option<ArrayVec<u32, 3>>,
    /// Whether it was pending when met (another thread may run it since).
    pub(crate) pending: bool,
    visited: bool,
}

impl Order {
    /// The pending nodes, inputs before users, as weak references: a node's consumers keep
    /// it alive until they run, and once they have run and detached, nothing needs it.
    pub(crate) fn into_weak(self) -> Vec<Weak<Node>> {
        self.order.iter().map(|&i| Arc::downgrade(&self.nodes[i as usize].array.0)).collect()
    }
}

/// Pending nodes reachable from `outputs`, inputs before users, each once, with their
/// consumer counts and input numbers (taken on the way: a second pass locking every node
/// again cost the fusion planner about a tenth of its time). Iterative depth-first
/// post-order, so a million-deep chain needs no stack.
pub(crate) fn topo_order(outputs: &[&Array]) -> Order {
    thread_local! {
        /// How many nodes this thread's last walk met: the next walk's tables start at
        /// that size, since a loop evaluates graphs of one size over and over. (Grown
        /// from empty, rehashing was about 3% of the 1000-op chain: perf, session 17.)
        static LAST_MET: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }
    let hint = LAST_MET.with(std::cell::Cell::get);
    let mut order = Vec::with_capacity(hint);
    let mut nodes: Vec<Met> = Vec::with_capacity(hint);
    let mut numbers = Numbers::new(hint);
    // (node, children pushed already?)
    let mut stack: Vec<(u32, bool)> = outputs.iter().map(|a| (numbers.of(&mut nodes, a), false)).collect();
    // Unvisited inputs of the node being expanded; one buffer for the whole walk.
    let mut next: Vec<u32> = Vec::new();
    while let Some((id, expanded)) = stack.pop() {
        if expanded {
            order.push(id);
            continue;
        }
        let met = &mut nodes[id as usize];
        if std::mem::replace(&mut met.visited, true) {
            continue;
        }
        let a = met.array.clone();
        match &*a.0.lock() {
            State::Pending { inputs, .. } => {
                let mut ins = ArrayVec::<u32, 3>::new();
                for i in inputs.iter() {
                    let k = numbers.of(&mut nodes, i);
                    let m = &mut nodes[k as usize];
                    m.consumers += 1;
                    let _ = ins.try_push(k);
                    if !m.visited {
                        next.push(k);
                    }
                }
                let met = &mut nodes[id as usize];
                met.pending = true;
                met.inputs = (inputs.len() <= 3).then_some(ins);
            }
            State::Running { .. } | State::Ready { .. } | State::Failed(_) => continue,
        }
        stack.push((id, true));
        // The first input on top: inputs run in the order they are named.
        stack.extend(next.drain(..).rev().map(|k| (k, false)));
    }
    LAST_MET.with(|n| n.set(nodes.len()));
    Order { order, nodes }
}

/// Walks in progress in this process: a walk that starts alone numbers nodes in their
/// [`Node::mark`]s, the others in a hash table (two walks writing marks at once would
/// overwrite each other's numbers).
static WALKING: AtomicUsize = AtomicUsize::new(0);

/// Ids of walks that number nodes in their marks (from 1: a new node's mark is 0).
static WALK_IDS: AtomicU32 = AtomicU32::new(1);

/// How a walk gives each node it meets its number.
enum Numbers {
    /// In the nodes' marks, tagged with this walk's id: the walk started alone. Hashing
    /// every node's address was a tenth of the 1000-op chain's walk (callgrind).
    Marks(u32),
    /// In a table by address: another walk was in progress when this one started.
    Table(HashMap<*const Node, u32>),
}

impl Numbers {
    fn new(hint: usize) -> Numbers {
        if WALKING.fetch_add(1, Ordering::Acquire) == 0 {
            Numbers::Marks(WALK_IDS.fetch_add(1, Ordering::Relaxed))
        } else {
            Numbers::Table(HashMap::with_capacity(hint))
        }
    }

    /// The number of `a`, given it on first sight.
    fn of(&mut self, nodes: &mut Vec<Met>, a: &Array) -> u32 {
        let fresh = |nodes: &mut Vec<Met>| {
            let id = u32::try_from(nodes.len()).expect("fewer than 2^32 nodes in one eval");
            nodes.push(Met { array: a.clone(), consumers: 0, inputs: None, pending: false, visited: false });
            id
        };
        match self {
            Numbers::Marks(walk) => {
                let mark = a.0.mark.load(Ordering::Relaxed);
                // The low half is the number (the high half the walk's id).
                let id = mark as u32;
                // A mark of this walk's id names this node only if the walk gave it: ids
                // wrap after 2^32 walks, so the number is checked against the node.
                if (mark >> 32) as u32 == *walk && nodes.get(id as usize).is_some_and(|m| m.array.ptr() == a.ptr()) {
                    return id;
                }
                let id = fresh(nodes);
                a.0.mark.store(u64::from(*walk) << 32 | u64::from(id), Ordering::Relaxed);
                id
            }
            Numbers::Table(ids) => *ids.entry(a.ptr()).or_insert_with(|| fresh(nodes)),
        }
    }
}

impl Drop for Numbers {
    fn drop(&mut self) {
        WALKING.fetch_sub(1, Ordering::Release);
    }
}

/// Computes the given arrays and everything they depend on, once each.
///
/// Nodes shared between the arrays, or with another thread's evaluation, run once: a
/// thread that finds a node running elsewhere waits for it.
pub fn eval(outputs: &[&Array]) -> Result<()> {
    let _guard = WorkGuard::enter()?;
    if let [a] = outputs
        && fusion::single(a)
    {
        run_node(&a.0)?;
        return wait_ready(&a.0).map(drop);
    }
    let order = topo_order(outputs);
    if crate::fusion::enabled() {
        for step in fusion::plan(order, outputs) {
            match step {
                Plan::Node(w) => {
                    if let Some(node) = w.upgrade() {
                        run_node(&node)?;
                    }
                }
                Plan::Region(r) => run_region(*r)?,
            }
        }
    } else {
        for w in order.into_weak() {
            if let Some(node) = w.upgrade() {
                run_node(&node)?;
            }
        }
    }
    for a in outputs {
        wait_ready(&a.0)?;
    }
    Ok(())
}

/// Starts evaluating the arrays on one of a few background workers (a fixed pool, not a
/// thread per call) and returns at once. A later
/// read or [`eval`] waits for the result; [`crate::synchronize`] waits for the stream.
pub fn async_eval(outputs: &[&Array]) -> Result<()> {
    let reg = registry();
    let mut streams: Vec<_> = outputs.iter().map(|a| a.stream()).collect();
    streams.dedup();
    for s in &streams {
        reg.check(s)?;
    }
    let arrays: Vec<Array> = outputs.iter().map(|a| (*a).clone()).collect();
    for s in &streams {
        reg.begin_work(s);
    }
    let job = {
        let streams = streams.clone();
        move || {
            let refs: Vec<&Array> = arrays.iter().collect();
            // The error stays on the failed node; a later read reports it.
            let _ = eval(&refs);
            for s in &streams {
                registry().end_work(s);
            }
        }
    };
    if let Err(e) = crate::worker::submit(Box::new(job)) {
        for s in &streams {
            reg.end_work(s);
        }
        return Err(e);
    }
    Ok(())
}

/// Waits until a node is no longer running and returns its buffer or error.
pub(crate) fn wait_ready(node: &Node) -> Result<Buffer> {
    let mut st = node.lock();
    loop {
        match &mut *st {
            State::Ready { buffer, .. } => return Ok(buffer.clone()),
            State::Failed(e) => return Err(e.clone()),
            State::Running { waited } => {
                *waited = true;
                st = node.done.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            State::Pending { .. } => {
                return Err(Error::Internal(format!("{} read before it was evaluated", node.op_name)));
            }
        }
    }
}

pub(crate) fn ready_buffer(a: &Array) -> Result<Buffer> {
    wait_ready(&a.0)
}

/// Runs one node if it is still pending. Inputs come earlier in the order, so they are
/// ready, failed, or running on another thread (then we wait).
fn run_node(node: &Node) -> Result<()> {
    run_with(node, |op, inputs| execute(node, op, inputs))
}

/// Runs a fused region in place of its root node. Exposed members (held outside the
/// region) take their extra outputs; the others stay pending: nothing outside the region
/// holds them, so they go when the root detaches. A region whose
/// kernel fails (to build, mostly) runs unfused instead, with a log line.
fn run_region(r: Region) -> Result<()> {
    let root = &r.root.0;
    run_with(root, |op, inputs| {
        let stream = &root.stream;
        registry().check(stream)?;
        let backend = backend_for(stream.device)?;
        let mut buffers = Vec::with_capacity(r.leaves.len());
        for a in &r.leaves {
            buffers.push(wait_ready(&a.0).map_err(|e| Error::eval(a.0.op_name, e))?);
        }
        let ins = local_inputs(&mut buffers, &r.leaves, stream)?;
        let fused = match backend.fuser() {
            Some(f) => f.run(stream, &r.program, &ins),
            None => Err(Error::Internal(format!("{} has no fuser but got a region", backend.name()))),
        };
        match fused {
            Ok(outs) if outs.len() == r.exposed.len() + 1 => {
                let mut outs = outs.into_iter();
                let main = outs.next().expect("one output at least");
                // Members held outside get their values now (one another thread computed
                // meanwhile keeps its own: `run_with` leaves a node that is not pending).
                for (m, b) in r.exposed.iter().zip(outs) {
                    run_with(&m.0, |_, _| Ok(b))?;
                }
                count_run(r.members.len() as u64 + 1);
                fusion::count_region();
                return Ok(main);
            }
            Ok(outs) => {
                return Err(Error::Internal(format!(
                    "{}: a fused region gave {} outputs for {}",
                    backend.name(),
                    outs.len(),
                    r.exposed.len() + 1
                )));
            }
            Err(e) if !unfused_may_help(&e) => return Err(e),
            Err(e) => log::warn!(
                "{}: a fused region of {} primitives failed ({e}); running them one by one",
                backend.name(),
                r.program.primitives()
            ),
        }
        drop(ins);
        // Folded constants first: `plan` may have left them out of the order.
        for (c, _) in &r.consts {
            run_node(&c.0)?;
        }
        for m in &r.members {
            run_node(&m.0)?;
        }
        execute(root, op, inputs)
    })
}

/// Takes a pending node's primitive and inputs, runs `exec` on them and stores the result.
fn run_with(node: &Node, exec: impl FnOnce(&Primitive, &[Array]) -> Result<Buffer>) -> Result<()> {
    let (op, inputs) = {
        let mut st = node.lock();
        match std::mem::replace(&mut *st, State::Running { waited: false }) {
            State::Pending { op, inputs } => (op, inputs),
            // Run already (or running elsewhere): put the state back.
            done @ (State::Running { .. } | State::Ready { .. } | State::Failed(_)) => {
                *st = done;
                return Ok(());
            }
        }
    };
    // A kernel that panics (a bug, or an allocation that overflows) must still leave the
    // node failed, or every later read of it would wait forever.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| exec(&op, &inputs)))
        .unwrap_or_else(|panic| Err(Error::Internal(format!("{} panicked: {}", op.name(), panic_message(&*panic)))));
    // Detach: unless the node is retained, `op` and `inputs` drop at the end of this
    // function, freeing inputs no one else holds.
    let kept = node.retain.then(|| Box::new(Kept { op, inputs }));
    let mut st = node.lock();
    let waited = matches!(*st, State::Running { waited: true });
    *st = match &result {
        Ok(b) => State::Ready { buffer: b.clone(), kept },
        Err(e) => State::Failed(e.clone()),
    };
    if waited {
        node.done.notify_all();
    }
    drop(st);
    result.map(|_| ())
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic.downcast_ref::<&str>().copied().or_else(|| panic.downcast_ref::<String>().map(String::as_str)).unwrap_or("?")
}

fn execute(node: &Node, op: &Primitive, inputs: &[Array]) -> Result<Buffer> {
    let stream = &node.stream;
    registry().check(stream)?;
    let backend = backend_for(stream.device)?;
    // Inline, as the metas and kernel inputs below: vectors here were three allocations
    // per op run (callgrind, the tiny read-back, session 18).
    let mut buffers = Buffers::with_capacity(inputs.len());
    for a in inputs {
        buffers.push(wait_ready(&a.0).map_err(|e| Error::eval(a.0.op_name, e))?);
    }
    count_run(1);
    if node.meta.numel() == 0 {
        // Kernels never see empty outputs.
        return backend.upload(stream, node.meta.dtype, &[]);
    }
    if let Primitive::Fused(f) = op {
        return run_fused(node, op, f, inputs, buffers, backend.as_ref());
    }
    let metas: SmallVec<[&Meta; 3]> = inputs.iter().map(|a| a.meta()).collect();
    if !backend.supports(op, &metas)
        && let Some(parts) = with_stream(stream, || op.rules().decompose(inputs))
    {
        log::debug!("{}: {} has no kernel for it; running its decomposition", backend.name(), op.name());
        // The decomposition's own nodes copy what they read to this device.
        return run_decomposed(node, op, parts?);
    }
    // Inputs on another device come over only now that this node runs a kernel here.
    let ins = local_inputs(&mut buffers, inputs, stream)?;
    let outs = backend.run(stream, op, &ins, std::slice::from_ref(&node.meta))?;
    single_output(backend.as_ref(), op, outs)
}

/// A region `compile` kept: the backend's fuser runs it, as it runs the regions the
/// fusion pass finds. Without a fuser, with fusion off, or when its kernel fails (to
/// build, mostly; with a log line, as in [`run_region`]) the region's primitives run
/// instead, one by one.
fn run_fused(
    node: &Node,
    op: &Primitive,
    f: &Fused,
    inputs: &[Array],
    mut buffers: Buffers,
    backend: &dyn Backend,
) -> Result<Buffer> {
    let stream = &node.stream;
    // With fusion turned off since the node was built, it runs unfused like any region.
    let fuser = backend.fuser().filter(|_| fusion::enabled());
    if let Some(fuser) = fuser {
        let ins = local_inputs(&mut buffers, inputs, stream)?;
        match fuser.run(stream, &f.program, &ins) {
            Ok(outs) => {
                // `execute` counted the node itself.
                count_run(f.program.primitives().saturating_sub(1) as u64);
                fusion::count_region();
                return single_output(backend, op, outs);
            }
            Err(e) if !unfused_may_help(&e) => return Err(e),
            Err(e) => log::warn!(
                "{}: a compiled region of {} primitives failed ({e}); running them one by one",
                backend.name(),
                f.program.primitives()
            ),
        }
    }
    let parts = with_stream(stream, || f.decompose(inputs))
        .unwrap_or_else(|| Err(Error::Internal("a fused node without parts".into())))?;
    // One by one: planning the parts again would find the region that just failed.
    fusion::with_enabled(false, || run_decomposed(node, op, parts))
}

/// Whether running a failed fused kernel's primitives one by one may succeed: not when
/// memory, the device or the process is the problem (then the error is reported at once).
fn unfused_may_help(e: &Error) -> bool {
    !matches!(e, Error::OutOfMemory { .. } | Error::ShutDown | Error::StreamClosed { .. })
}

/// The kernel inputs of `arrays`, whose `buffers` are copied here first where they live on
/// another device than `stream`'s.
fn local_inputs<'a>(
    buffers: &'a mut [Buffer],
    arrays: &'a [Array],
    stream: &Stream,
) -> Result<SmallVec<[Input<'a>; 3]>> {
    for (b, a) in buffers.iter_mut().zip(arrays) {
        if b.device() != stream.device {
            *b = transfer(b, a, stream)?;
        }
    }
    Ok(buffers.iter().zip(arrays).map(|(b, a)| Input { buffer: b, meta: a.meta() }).collect())
}

fn single_output(backend: &dyn Backend, op: &Primitive, outs: Vec<Buffer>) -> Result<Buffer> {
    let n = outs.len();
    outs.into_iter().next().filter(|_| n == 1).ok_or_else(|| {
        Error::unsupported(backend.name(), format!("{} returned {n} outputs for a primitive with 1", op.name()))
    })
}

thread_local! {
    /// Decompositions being evaluated on this thread, one inside another.
    static DECOMPOSING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Bound on nested decompositions: each level only uses simpler primitives, so a real
/// chain is a few levels deep; more means a decomposition that feeds on itself.
const MAX_DECOMPOSE_DEPTH: usize = 16;

/// Evaluates the arrays a decomposition built in place of `op` and takes the result.
fn run_decomposed(node: &Node, op: &Primitive, parts: Vec<Array>) -> Result<Buffer> {
    let depth = DECOMPOSING.with(|d| d.get());
    if depth >= MAX_DECOMPOSE_DEPTH {
        return Err(Error::Internal(format!("{} decomposes into itself", op.name())));
    }
    // Restored on unwind too: a kernel panic inside is caught further out.
    struct Depth(usize);
    impl Drop for Depth {
        fn drop(&mut self) {
            DECOMPOSING.with(|d| d.set(self.0));
        }
    }
    DECOMPOSING.with(|d| d.set(depth + 1));
    let _restore = Depth(depth);
    let refs: Vec<&Array> = parts.iter().collect();
    // Name the primitive the user's graph holds, not the step it was lowered to.
    eval(&refs).map_err(|e| Error::Eval { op: op.name(), cause: Arc::new(e.root_cause().clone()) })?;
    let [out] = parts.as_slice() else {
        return Err(Error::Internal(format!("{}'s decomposition gave {} outputs for 1", op.name(), parts.len())));
    };
    if out.meta() != &node.meta || out.stream() != node.stream {
        return Err(Error::Internal(format!(
            "{}'s decomposition gave {:?} on {:?} for {:?} on {:?}",
            op.name(),
            out.meta(),
            out.stream(),
            node.meta,
            node.stream
        )));
    }
    wait_ready(&out.0)
}

/// Copies a buffer to the device of `stream` through host memory, once per node and
/// device: the copy is kept on the node (`Node::mirror`), so a host array read by many
/// ops on a GPU is uploaded once (a 1M-op chain with a host constant stays linear).
/// One mirror per node: a node read on a third device copies again each time.
fn transfer(b: &Buffer, a: &Array, stream: &Stream) -> Result<Buffer> {
    let mut mirror = a.0.mirror.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(m) = mirror.as_ref()
        && m.device() == stream.device
    {
        return Ok(m.clone());
    }
    // The lock is held while copying: a second reader waits for this copy, not a second.
    // (Lock order: a node's mirror, then the backends' own locks; nothing locks a mirror
    // while holding a backend lock.)
    let bytes = backend_for(b.device())?.download(b)?;
    let copy = backend_for(stream.device)?.upload(stream, a.dtype(), &bytes)?;
    *mirror = Some(copy.clone());
    Ok(copy)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Walks started at once over one pending graph each list every node once: whichever
    /// walk keeps its numbers in the nodes, the others must not read or overwrite them (a
    /// node numbered twice would be planned twice).
    #[test]
    fn concurrent_walks_meet_each_node_once() {
        let x = Array::from_slice(&[1f32, 2.0], &[2]).unwrap();
        let h = Array::from_slice(&[0.5f32, 0.5], &[2]).unwrap();
        let mut y = x.mul(&h).unwrap();
        const DIAMONDS: usize = 2000;
        for _ in 0..DIAMONDS {
            y = y.mul(&h).unwrap().add(y.mul(&h).unwrap()).unwrap();
        }
        let start = std::sync::Barrier::new(4);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    start.wait();
                    for _ in 0..5 {
                        let order = topo_order(&[&y]);
                        let mut met: Vec<*const Node> = order.nodes.iter().map(|m| m.array.ptr()).collect();
                        met.sort();
                        met.dedup();
                        // x and h, the first product, three nodes a diamond.
                        assert_eq!(met.len(), order.nodes.len(), "a node was numbered twice");
                        assert_eq!(met.len(), 3 + 3 * DIAMONDS);
                        assert_eq!(order.order.len(), 1 + 3 * DIAMONDS);
                    }
                });
            }
        });
    }
}
