//! `compile`: trace a function of arrays once per input signature and replay the trace.
//!
//! A trace records the primitives the function builds between its inputs and outputs, in
//! topological order, with
//! - **common subexpressions removed**: a primitive with the same parameters and the same
//!   arguments as an earlier one is that one;
//! - **constants folded**: a subgraph that reads no input (captured weights, `exp` of a
//!   table) is evaluated once, at trace time, and kept as data. Scalar constants with no
//!   inputs (`x * 0.5` makes a one-element `Full`) stay steps, so the fusion pass can fold
//!   them into a kernel's parameters.
//!
//! A call whose signature (per input: device, dtype and shape; with [`Compiled::shapeless`],
//! rank instead of shape) was traced before replays the steps: no argument checking, no
//! lowering of composite ops, no closure call. The replayed graph is ordinary primitives,
//! so it fuses at eval, and transforms (`grad`, `vjp`) see through it.
//!
//! Caveats, as with any tracing compiler: a function that reads values (`item`, `to_vec`)
//! or branches on them is traced for the values of the first call; in shapeless mode,
//! constants derived from sizes are those of the traced shape (`mean` divides by the traced
//! count), so shapeless mode is for functions whose graph does not depend on sizes
//! (elementwise chains, activations). A replay whose shapes a primitive rejects traces
//! again.
//!
//! The trace cache is bounded ([`Compiled::cache_limit`], default
//! [`DEFAULT_CACHE_LIMIT`]): the least recently used signature goes first, so a function
//! called with ever-changing shapes holds a fixed number of traces, not every one it saw.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::array::{Array, Node, not_retaining, retaining};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::primitive::{DeviceCopy, Primitive};
use crate::stream::{Device, default_stream, with_stream};

/// Traces a [`Compiled`] keeps unless told otherwise.
pub const DEFAULT_CACHE_LIMIT: usize = 64;

/// `f`, traced once per input signature and replayed after (see the [module docs](self)).
///
/// ```
/// use lazuli::Array;
/// let gelu = lazuli::compile(|x: &[Array]| {
///     let x = &x[0];
///     let inner = (&(x + &(&(x * x)? * x)?.mul(0.044715)?)? * 0.7978845608)?;
///     Ok(vec![(&(x * 0.5)? * &(&inner.tanh()? + 1.0)?)?])
/// });
/// let a = Array::from_slice(&[-1.0f32, 0.0, 2.0], &[3])?;
/// let y = gelu.call(&[a.clone()])?;
/// let again = gelu.call(&[(&a * 2.0)?])?; // same signature: replayed
/// assert_eq!(gelu.traces(), 1);
/// assert!((y[0].to_vec::<f32>()?[2] - 1.9545977).abs() < 1e-6);
/// # let _ = again;
/// # Ok::<(), lazuli::Error>(())
/// ```
pub fn compile<F>(f: F) -> Compiled<F>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    Compiled {
        f,
        shapeless: false,
        limit: DEFAULT_CACHE_LIMIT,
        cache: Mutex::new(Cache { traces: Vec::new(), clock: 0 }),
        traced: AtomicUsize::new(0),
    }
}

/// A compiled function: [`compile`].
pub struct Compiled<F> {
    f: F,
    shapeless: bool,
    limit: usize,
    cache: Mutex<Cache>,
    traced: AtomicUsize,
}

/// What identifies an input for the cache.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct InputKey {
    device: Device,
    dtype: DType,
    /// The shape, or only its rank (shapeless mode) as `[usize::MAX; rank]`.
    shape: Vec<usize>,
}

struct Cache {
    /// (signature, trace, last use): few enough that a scan beats a map plus a list.
    traces: Vec<(Vec<InputKey>, Arc<Trace>, u64)>,
    clock: u64,
}

/// Where a value of the trace comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Ref {
    /// The call's input `i`.
    Input(usize),
    /// Captured data `j` (folded at trace time).
    Const(usize),
    /// The result of step `k`.
    Step(usize),
}

/// Where a step with no arguments (a constant) is made.
#[derive(Debug, Clone, Copy)]
enum Place {
    /// On input `i`'s stream, where it was traced.
    LikeInput(usize),
    /// On the device's default stream.
    Device(Device),
}

struct TraceStep {
    op: Primitive,
    args: Vec<Ref>,
    place: Place,
}

/// One signature's recorded function.
struct Trace {
    steps: Vec<TraceStep>,
    consts: Vec<Array>,
    outputs: Vec<Ref>,
}

impl<F> Compiled<F>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    /// Keys the cache on each input's rank instead of its shape, so one trace serves every
    /// size (see the module's caveats). Off by default.
    pub fn shapeless(mut self, on: bool) -> Self {
        self.shapeless = on;
        self
    }

    /// Keeps at most `n` traces (at least 1); the least recently used goes first.
    pub fn cache_limit(mut self, n: usize) -> Self {
        self.limit = n.max(1);
        self
    }

    /// How many times the function has been traced (calls that did not replay).
    pub fn traces(&self) -> usize {
        self.traced.load(Ordering::Relaxed)
    }

    /// How many traces the cache holds now.
    pub fn cached(&self) -> usize {
        self.lock().traces.len()
    }

    /// Primitives the trace for these inputs replays (tracing first if needed): what the
    /// common-subexpression and constant passes left.
    pub fn primitives(&self, inputs: &[Array]) -> Result<usize> {
        Ok(self.trace_for(inputs)?.0.steps.len())
    }

    /// Runs the function on `inputs`: a replay of the trace for their signature, or a new
    /// trace. The outputs are lazy, like any op's.
    pub fn call(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        let (trace, fresh) = self.trace_for(inputs)?;
        match trace.replay(inputs) {
            Ok(out) => Ok(out),
            // Shapeless: a primitive refused the new sizes; this signature needs its own trace.
            Err(e) if self.shapeless && !fresh => {
                log::debug!("compile: a shapeless replay failed ({e}); tracing again");
                let trace = Arc::new(self.trace(inputs)?);
                self.insert(self.key(inputs), trace.clone());
                trace.replay(inputs)
            }
            Err(e) => Err(e),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn key(&self, inputs: &[Array]) -> Vec<InputKey> {
        inputs
            .iter()
            .map(|a| InputKey {
                device: a.stream().device,
                dtype: a.dtype(),
                shape: if self.shapeless { vec![usize::MAX; a.ndim()] } else { a.shape().to_vec() },
            })
            .collect()
    }

    /// The cached trace for `inputs`, or a new one (and whether it is new).
    fn trace_for(&self, inputs: &[Array]) -> Result<(Arc<Trace>, bool)> {
        let key = self.key(inputs);
        {
            let mut c = self.lock();
            c.clock += 1;
            let now = c.clock;
            if let Some((_, t, used)) = c.traces.iter_mut().find(|(k, _, _)| *k == key) {
                *used = now;
                return Ok((t.clone(), false));
            }
        }
        // Traced outside the lock: the function may be long, and may call other compiled
        // functions (or this one, on other shapes).
        let trace = Arc::new(self.trace(inputs)?);
        self.insert(key, trace.clone());
        Ok((trace, true))
    }

    fn insert(&self, key: Vec<InputKey>, trace: Arc<Trace>) {
        let mut c = self.lock();
        c.traces.retain(|(k, _, _)| *k != key);
        while c.traces.len() >= self.limit {
            let oldest = c.traces.iter().enumerate().min_by_key(|(_, (_, _, used))| *used).map(|(i, _)| i);
            match oldest {
                Some(i) => drop(c.traces.swap_remove(i)),
                None => break,
            }
        }
        let now = c.clock;
        c.traces.push((key, trace, now));
    }

    fn trace(&self, inputs: &[Array]) -> Result<Trace> {
        self.traced.fetch_add(1, Ordering::Relaxed);
        // Stand-ins: fresh nodes, so the walk can tell the function's use of an input from
        // other paths to the same array (an input passed twice, or captured as well).
        let stand_ins: Vec<Array> = inputs
            .iter()
            .map(|x| with_stream(&x.stream(), || Array::from_op(DeviceCopy, vec![x.clone()])))
            .collect::<Result<_>>()?;
        // Retaining: a node the function evaluates keeps its graph, so the walk sees
        // through it instead of baking its value in.
        let outputs = retaining(|| (self.f)(&stand_ins))?;
        record(&stand_ins, &outputs)
    }
}

impl Trace {
    fn replay(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        let mut vals: Vec<Array> = Vec::with_capacity(self.steps.len());
        let get = |r: Ref, vals: &[Array]| -> Array {
            match r {
                Ref::Input(i) => inputs[i].clone(),
                Ref::Const(j) => self.consts[j].clone(),
                Ref::Step(k) => vals[k].clone(),
            }
        };
        for s in &self.steps {
            let args: Vec<Array> = s.args.iter().map(|&r| get(r, &vals)).collect();
            let node = if args.is_empty() {
                let stream = match s.place {
                    Place::LikeInput(i) => inputs[i].stream(),
                    Place::Device(d) => default_stream(d)?,
                };
                with_stream(&stream, || Array::from_op(s.op.clone(), args))?
            } else {
                Array::from_op(s.op.clone(), args)?
            };
            vals.push(node);
        }
        Ok(self.outputs.iter().map(|&r| get(r, &vals)).collect())
    }
}

/// A node of the walk: the node, its graph (if it has one), the next input to visit.
type Frame = (Array, Option<(Primitive, Vec<Array>)>, usize);

/// The trace of `outputs` over `stand_ins`: post-order, iteratively (traced chains can be
/// long), with common subexpressions merged and input-free subgraphs folded.
fn record(stand_ins: &[Array], outputs: &[Array]) -> Result<Trace> {
    let mut refs: HashMap<*const Node, Ref> = HashMap::new();
    for (i, s) in stand_ins.iter().enumerate() {
        refs.insert(s.ptr(), Ref::Input(i));
    }
    let mut steps: Vec<TraceStep> = Vec::new();
    let mut consts: Vec<Array> = Vec::new();
    // (op name, args) -> steps with them: the candidates a new step may equal.
    let mut seen: HashMap<(&'static str, Vec<Ref>), Vec<usize>> = HashMap::new();
    let capture = |a: &Array, consts: &mut Vec<Array>| -> Result<Ref> {
        // Detached data: evaluated once, without the (retained) graph that made it.
        let data = not_retaining(|| with_stream(&a.stream(), || Array::from_op(DeviceCopy, vec![a.clone()])))?;
        data.eval()?;
        consts.push(data);
        Ok(Ref::Const(consts.len() - 1))
    };
    for out in outputs {
        if refs.contains_key(&out.ptr()) {
            continue;
        }
        let mut stack: Vec<Frame> = vec![(out.clone(), out.graph(), 0)];
        while let Some((_, graph, next)) = stack.last_mut() {
            if let Some((_, inputs)) = graph
                && let Some(child) = inputs.get(*next)
            {
                *next += 1;
                if !refs.contains_key(&child.ptr()) {
                    let child = child.clone();
                    let g = child.graph();
                    stack.push((child, g, 0));
                }
                continue;
            }
            let (node, graph, _) = stack.pop().ok_or_else(|| Error::Internal("compile: empty walk".into()))?;
            let r = match graph {
                // Data, or a node evaluated outside the trace: captured as it is.
                None => capture(&node, &mut consts)?,
                Some((op, inputs)) => {
                    let args: Vec<Ref> = inputs.iter().map(|i| refs[&i.ptr()]).collect();
                    let reads_input = args.iter().any(|r| !matches!(r, Ref::Const(_)));
                    if !args.is_empty() && !reads_input {
                        capture(&node, &mut consts)?
                    } else {
                        let key = (op.name(), args);
                        let same = seen.get(&key).and_then(|c| c.iter().find(|&&k| steps[k].op == op)).copied();
                        match same {
                            Some(k) => Ref::Step(k),
                            None => {
                                let stream = node.stream();
                                let place = stand_ins
                                    .iter()
                                    .position(|s| s.stream() == stream)
                                    .map_or(Place::Device(stream.device), Place::LikeInput);
                                seen.entry(key.clone()).or_default().push(steps.len());
                                steps.push(TraceStep { op, args: key.1, place });
                                Ref::Step(steps.len() - 1)
                            }
                        }
                    }
                }
            };
            refs.insert(node.ptr(), r);
        }
    }
    let outputs = outputs.iter().map(|o| refs[&o.ptr()]).collect();
    Ok(Trace { steps, consts, outputs })
}
