//! Evaluation: topological order without recursion, each node run once, detach after.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use crate::array::{Array, Node, State};
use crate::backend::{Buffer, Input, backend_for};
use crate::error::{Error, Result};
use crate::lifecycle::WorkGuard;
use crate::stream::registry;

static PRIMITIVES_RUN: AtomicU64 = AtomicU64::new(0);

/// How many primitives this process has run so far (on every device). For tests of
/// laziness and sharing, and for profiling.
pub fn primitives_run() -> u64 {
    PRIMITIVES_RUN.load(Ordering::Relaxed)
}

/// Pending nodes reachable from `outputs`, inputs before users, each once. Iterative
/// depth-first post-order, so a million-deep chain needs no stack.
///
/// The order holds weak references: a node's consumers keep it alive until they run,
/// and once they have run and detached, nothing needs it.
fn topo_order(outputs: &[&Array]) -> Vec<Weak<Node>> {
    let mut order = Vec::new();
    let mut seen: HashSet<*const Node> = HashSet::new();
    // (node, children pushed already?)
    let mut stack: Vec<(Array, bool)> = outputs.iter().map(|a| ((*a).clone(), false)).collect();
    while let Some((a, expanded)) = stack.pop() {
        if expanded {
            order.push(Arc::downgrade(&a.0));
            continue;
        }
        if !seen.insert(a.ptr()) {
            continue;
        }
        let inputs = match &*a.0.lock() {
            State::Pending { inputs, .. } => inputs.clone(),
            _ => continue,
        };
        stack.push((a, true));
        for i in inputs.into_iter().rev() {
            if !seen.contains(&i.ptr()) {
                stack.push((i, false));
            }
        }
    }
    order
}

/// Computes the given arrays and everything they depend on, once each.
///
/// Nodes shared between the arrays, or with another thread's evaluation, run once: a
/// thread that finds a node running elsewhere waits for it.
pub fn eval(outputs: &[&Array]) -> Result<()> {
    let _guard = WorkGuard::enter()?;
    for w in topo_order(outputs) {
        if let Some(node) = w.upgrade() {
            run_node(&node)?;
        }
    }
    for a in outputs {
        wait_ready(&a.0)?;
    }
    Ok(())
}

/// Starts evaluating the arrays on a background thread and returns at once. A later
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
    let spawned = std::thread::Builder::new().name("lazuli-async-eval".into()).spawn({
        let streams = streams.clone();
        move || {
            let refs: Vec<&Array> = arrays.iter().collect();
            // The error stays on the failed node; a later read reports it.
            let _ = eval(&refs);
            for s in &streams {
                registry().end_work(s);
            }
        }
    });
    if let Err(e) = spawned {
        for s in &streams {
            reg.end_work(s);
        }
        return Err(Error::Device(format!("async_eval: cannot start a thread: {e}")));
    }
    Ok(())
}

/// Waits until a node is no longer running and returns its buffer or error.
pub(crate) fn wait_ready(node: &Node) -> Result<Buffer> {
    let mut st = node.lock();
    loop {
        match &*st {
            State::Ready(b) => return Ok(b.clone()),
            State::Failed(e) => return Err(e.clone()),
            State::Running => st = node.done.wait(st).unwrap_or_else(|e| e.into_inner()),
            State::Pending { .. } => {
                return Err(Error::Eval("internal: node not evaluated".into()));
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
    let (op, inputs) = {
        let mut st = node.lock();
        match std::mem::replace(&mut *st, State::Running) {
            State::Pending { op, inputs } => (op, inputs),
            other => {
                *st = other;
                return Ok(());
            }
        }
    };
    let result = execute(node, &op, &inputs);
    // Detach: `op` and `inputs` drop at the end of this function, freeing inputs no
    // one else holds.
    let mut st = node.lock();
    *st = match &result {
        Ok(b) => State::Ready(b.clone()),
        Err(e) => State::Failed(e.clone()),
    };
    node.done.notify_all();
    drop(st);
    result.map(|_| ())
}

fn execute(node: &Node, op: &crate::primitive::Primitive, inputs: &[Array]) -> Result<Buffer> {
    let stream = &node.stream;
    registry().check(stream)?;
    let backend = backend_for(stream.device)?;
    let mut buffers = Vec::with_capacity(inputs.len());
    for a in inputs {
        let b = wait_ready(&a.0).map_err(|e| match e {
            Error::Eval(_) => e,
            other => Error::Eval(other.to_string()),
        })?;
        buffers.push(if b.device() == stream.device { b } else { transfer(&b, a, stream)? });
    }
    let ins: Vec<Input<'_>> = buffers.iter().zip(inputs).map(|(b, a)| Input { buffer: b, meta: a.meta() }).collect();
    PRIMITIVES_RUN.fetch_add(1, Ordering::Relaxed);
    if node.meta.shape.contains(&0) {
        return backend.allocate(stream, node.meta.dtype, 0);
    }
    backend.run(stream, op, &ins, &node.meta)
}

/// Copies a buffer to the device of `stream` through host memory.
fn transfer(b: &Buffer, a: &Array, stream: &crate::stream::Stream) -> Result<Buffer> {
    let bytes = backend_for(b.device())?.download(b, a.dtype(), a.size())?;
    backend_for(stream.device)?.upload(stream, a.dtype(), &bytes)
}
