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
//! lowering of composite ops, no closure call.
//!
//! **The fused plan is kept too.** With fusion on, a trace is planned, as an eval of its
//! outputs would be, at the first call with given input shapes, stream scope and default
//! device (shapeless traces keep up to 8 such plans), and a call builds one [`Fused`]
//! node per region (the backend's fuser runs it as one kernel) and a node per primitive
//! outside regions: no per-primitive nodes, and no planning at eval ([`Compiled::nodes`]
//! counts them). With fusion off and inside a transform (`grad`, `vjp` see primitives)
//! the steps are replayed one by one and fuse at eval as any graph does. A region member
//! that is also an output is kept as steps, and a region's outputs do not fuse further
//! with what the caller builds on them. A region whose kernel fails to build runs its
//! primitives instead, with a log line.
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

use crate::array::{Array, Node, State, is_retaining, not_retaining, retaining};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::fusion::Plan;
use crate::primitive::{ArrayFn, DeviceCopy, Fused, Meta, Primitive};
use crate::stream::{Device, Stream, default_device, default_stream, scoped_stream, with_stream};

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
        cache: Mutex::new(Lru::new()),
        traced: AtomicUsize::new(0),
    }
}

/// A compiled function: [`compile`].
pub struct Compiled<F> {
    f: F,
    shapeless: bool,
    limit: usize,
    /// The traces, by signature.
    cache: Mutex<Lru<Vec<InputKey>, Arc<Trace>>>,
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

/// A short least-recently-used list (the traces of a function, the plans of a trace):
/// few enough entries that a scan beats a map plus a list. The most recently used is last.
struct Lru<K, V> {
    entries: Vec<(K, V)>,
}

impl<K: PartialEq, V: Clone> Lru<K, V> {
    const fn new() -> Self {
        Lru { entries: Vec::new() }
    }

    /// The value kept for `key`, which becomes the most recently used.
    fn get(&mut self, key: &K) -> Option<V> {
        let i = self.entries.iter().position(|(k, _)| k == key)?;
        let entry = self.entries.remove(i);
        let value = entry.1.clone();
        self.entries.push(entry);
        Some(value)
    }

    /// Keeps `value` for `key` (in place of any other), dropping the least recently used
    /// entries so that at most `cap` (at least 1) remain.
    fn insert(&mut self, key: K, value: V, cap: usize) {
        self.entries.retain(|(k, _)| *k != key);
        while self.entries.len() >= cap.max(1) {
            self.entries.remove(0);
        }
        self.entries.push((key, value));
    }

    fn len(&self) -> usize {
        self.entries.len()
    }
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
    /// The fusion pass's plans of the steps, one per input metas, stream scope and
    /// default device a call came with (several in shapeless mode), made at the first
    /// such call with fusion on; `None` where no region forms. The most recent last, at
    /// most [`PLANS_PER_TRACE`].
    plans: Mutex<Lru<PlanKey, Option<Arc<FusedPlan>>>>,
}

/// Plans one trace keeps: a shapeless trace called with ever-changing sizes plans each
/// new one again rather than holding a plan per size it saw.
const PLANS_PER_TRACE: usize = 8;

/// What a plan depends on besides the trace: the inputs' metas, and the stream scope and
/// default device, which decide where nodes go (a region's node is placed as the traced
/// steps' were).
#[derive(Clone, PartialEq)]
struct PlanKey {
    inputs: Vec<Meta>,
    /// Per input, the first input on the same stream: regions join only nodes of one
    /// stream, so inputs sharing streams differently plan differently.
    streams: Vec<usize>,
    scope: Option<Stream>,
    default_device: Device,
}

impl PlanKey {
    fn of(inputs: &[Array]) -> PlanKey {
        let streams: Vec<Stream> = inputs.iter().map(Array::stream).collect();
        PlanKey {
            inputs: inputs.iter().map(|a| a.meta().clone()).collect(),
            streams: streams.iter().map(|s| streams.iter().position(|t| t == s).unwrap_or_default()).collect(),
            scope: scoped_stream(),
            default_device: default_device(),
        }
    }
}

/// What a call builds when the trace's fused plan applies: one `Fused` node per region
/// the fusion pass found in the trace, and the steps outside regions as they are.
struct FusedPlan {
    calls: Vec<Call>,
}

/// One node a planned call builds.
enum Call {
    /// Trace step `k`, on its own.
    Step(usize),
    /// The region whose value is step `root`'s: one node reading `leaves`.
    Region { root: usize, fused: Fused, leaves: Vec<Ref>, place: Place },
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
        self.lock().len()
    }

    /// Primitives the trace for these inputs replays (tracing first if needed): what the
    /// common-subexpression and constant passes left.
    pub fn primitives(&self, inputs: &[Array]) -> Result<usize> {
        Ok(self.trace_for(inputs)?.0.steps.len())
    }

    /// Nodes a call on these inputs builds (tracing first if needed): one per fused
    /// region the trace keeps, plus one per primitive outside them; with fusion off or
    /// inside a transform, [`Compiled::primitives`].
    pub fn nodes(&self, inputs: &[Array]) -> Result<usize> {
        let trace = self.trace_for(inputs)?.0;
        Ok(trace.plan_for(inputs).map_or(trace.steps.len(), |p| p.calls.len()))
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

    fn lock(&self) -> std::sync::MutexGuard<'_, Lru<Vec<InputKey>, Arc<Trace>>> {
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
        if let Some(t) = self.lock().get(&key) {
            return Ok((t, false));
        }
        // Traced outside the lock: the function may be long, and may call other compiled
        // functions (or this one, on other shapes).
        let trace = Arc::new(self.trace(inputs)?);
        self.insert(key, trace.clone());
        Ok((trace, true))
    }

    fn insert(&self, key: Vec<InputKey>, trace: Arc<Trace>) {
        self.lock().insert(key, trace, self.limit);
    }

    fn trace(&self, inputs: &[Array]) -> Result<Trace> {
        self.traced.fetch_add(1, Ordering::Relaxed);
        // Stand-ins: fresh nodes, so the walk can tell the function's use of an input from
        // other paths to the same array (an input passed twice, or captured as well).
        let stand_ins: Vec<Array> = inputs
            .iter()
            .map(|x| with_stream(&x.stream(), || Array::from_op(DeviceCopy, [x.clone()])))
            .collect::<Result<_>>()?;
        // Retaining: a node the function evaluates keeps its graph, so the walk sees
        // through it instead of baking its value in.
        let outputs = retaining(|| (self.f)(&stand_ins))?;
        record(&stand_ins, &outputs)
    }
}

impl TraceStep {
    /// The step's node over `args`, in a call on `inputs`: a step without arguments is
    /// made at its place; the others where their arguments put them.
    fn build(&self, args: Vec<Array>, inputs: &[Array]) -> Result<Array> {
        if args.is_empty() {
            with_stream(&self.place.stream(inputs)?, || Array::from_op(self.op.clone(), args))
        } else {
            Array::from_op(self.op.clone(), args)
        }
    }
}

impl Place {
    /// The stream this place names for a call on `inputs`.
    fn stream(self, inputs: &[Array]) -> Result<Stream> {
        match self {
            Place::LikeInput(i) => Ok(inputs[i].stream()),
            Place::Device(d) => default_stream(d),
        }
    }

    /// Where a value on `stream` is made: like the first of `inputs` on it, else on the
    /// device's default stream.
    fn of(stream: &Stream, inputs: &[Array]) -> Place {
        inputs.iter().position(|s| s.stream() == *stream).map_or(Place::Device(stream.device), Place::LikeInput)
    }
}

impl Trace {
    /// The outputs of a call on `inputs`: through the fused plan where it applies (fusion
    /// on, outside transforms, the planned input metas), else step by step.
    fn replay(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        if let Some(plan) = self.plan_for(inputs) {
            return self.replay_planned(&plan, inputs);
        }
        self.replay_unplanned(inputs)
    }

    /// The outputs of a call on `inputs`, step by step.
    fn replay_unplanned(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        let vals = self.replay_steps(inputs)?;
        Ok(self.outputs.iter().map(|&r| self.get(r, inputs, &vals)).collect())
    }

    /// The plan for a call on `inputs` here, made now if this is the first such call;
    /// `None` with fusion off, inside a transform (transforms walk primitives, not
    /// regions), or where no region forms.
    fn plan_for(&self, inputs: &[Array]) -> Option<Arc<FusedPlan>> {
        if !crate::fusion::enabled() || is_retaining() {
            return None;
        }
        let key = PlanKey::of(inputs);
        let lock = || self.plans.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(plan) = lock().get(&key) {
            return plan;
        }
        // Planned outside the lock (another thread may plan the same key meanwhile: the
        // plans are equal, and the later one replaces nothing it needs).
        let plan = match not_retaining(|| self.plan_regions(inputs)) {
            Ok(plan) => plan.map(Arc::new),
            // The steps refuse these inputs (a shapeless trace at sizes a primitive
            // rejects): the replay fails the same way, and the call traces again. Not kept.
            Err(e) => {
                log::debug!("compile: no plan for these inputs ({e})");
                return None;
            }
        };
        lock().insert(key, plan.clone(), PLANS_PER_TRACE);
        plan
    }

    fn get(&self, r: Ref, inputs: &[Array], vals: &[Array]) -> Array {
        match r {
            Ref::Input(i) => inputs[i].clone(),
            Ref::Const(j) => self.consts[j].clone(),
            Ref::Step(k) => vals[k].clone(),
        }
    }

    /// Every step's node for a call on `inputs`.
    fn replay_steps(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        let mut vals: Vec<Array> = Vec::with_capacity(self.steps.len());
        for s in &self.steps {
            let args: Vec<Array> = s.args.iter().map(|&r| self.get(r, inputs, &vals)).collect();
            vals.push(s.build(args, inputs)?);
        }
        Ok(vals)
    }

    fn replay_planned(&self, plan: &FusedPlan, inputs: &[Array]) -> Result<Vec<Array>> {
        let mut vals: Vec<Option<Array>> = vec![None; self.steps.len()];
        let get = |r: Ref, vals: &[Option<Array>]| -> Result<Array> {
            match r {
                Ref::Input(i) => Ok(inputs[i].clone()),
                Ref::Const(j) => Ok(self.consts[j].clone()),
                Ref::Step(k) => vals[k].clone().ok_or_else(|| Error::Internal(format!("compile: step {k} not built"))),
            }
        };
        for call in &plan.calls {
            let (k, node) = match call {
                Call::Step(k) => {
                    let s = &self.steps[*k];
                    let args = s.args.iter().map(|&r| get(r, &vals)).collect::<Result<Vec<_>>>()?;
                    (*k, s.build(args, inputs)?)
                }
                Call::Region { root, fused, leaves, place } => {
                    let args = leaves.iter().map(|&r| get(r, &vals)).collect::<Result<Vec<_>>>()?;
                    (*root, with_stream(&place.stream(inputs)?, || Array::from_op(fused.clone(), args))?)
                }
            };
            vals[k] = Some(node);
        }
        self.outputs.iter().map(|&r| get(r, &vals)).collect()
    }

    /// The fusion pass's plan of this trace for inputs like `inputs`: the steps replayed
    /// once over placeholders (nodes of the inputs' metas and streams that are not
    /// pending, so the pass treats them as data), planned as an eval of the outputs would
    /// be, each region becoming a [`Call::Region`]. `None` when no region forms.
    fn plan_regions(&self, inputs: &[Array]) -> Result<Option<FusedPlan>> {
        let holders: Vec<Array> = inputs
            .iter()
            .map(|a| {
                let placeholder = Error::Internal("compile: a planning placeholder was read".into());
                Array::with_state(a.meta().clone(), a.stream(), "input", State::Failed(placeholder))
            })
            .collect();
        let vals = self.replay_steps(&holders)?;
        let mut refs: HashMap<*const Node, Ref> = HashMap::new();
        for (i, h) in holders.iter().enumerate() {
            refs.insert(h.ptr(), Ref::Input(i));
        }
        for (j, c) in self.consts.iter().enumerate() {
            refs.insert(c.ptr(), Ref::Const(j));
        }
        for (k, v) in vals.iter().enumerate() {
            refs.insert(v.ptr(), Ref::Step(k));
        }
        let outputs: Vec<Array> = self.outputs.iter().map(|&r| self.get(r, &holders, &vals)).collect();
        // Only the outputs (and the graph under them) held, as in an eval of a call's
        // results: the pass reads extra holders as user handles.
        drop(vals);
        let roots: Vec<&Array> = outputs.iter().collect();
        let order = crate::eval::topo_order(&roots);
        let step_of = |a: &Array| match refs.get(&a.ptr()) {
            Some(&Ref::Step(k)) => Some(k),
            _ => None,
        };
        let mut calls = Vec::new();
        let mut regions = 0;
        for p in crate::fusion::plan(order, &roots) {
            let r = match p {
                Plan::Node(w) => {
                    if let Some(k) = w.upgrade().and_then(|n| step_of(&Array(n))) {
                        calls.push(Call::Step(k));
                    }
                    continue;
                }
                Plan::Region(r) => r,
            };
            let (Some(root), Some(members)) =
                (step_of(&r.root), r.members.iter().map(step_of).collect::<Option<Vec<_>>>())
            else {
                return Ok(None);
            };
            let leaves: Option<Vec<Ref>> = r.leaves.iter().map(|a| refs.get(&a.ptr()).copied()).collect();
            // A region that writes members out (a member is also an output) stays steps:
            // eval fuses them as before.
            let (Some(leaves), true) = (leaves, r.exposed.is_empty()) else {
                // Its folded constants too: the pass leaves out of the order those that
                // only regions read.
                for k in r.consts.iter().filter_map(|(c, _)| step_of(c)) {
                    if !calls.iter().any(|c| matches!(c, Call::Step(j) if *j == k)) {
                        calls.push(Call::Step(k));
                    }
                }
                calls.extend(members.iter().map(|&k| Call::Step(k)));
                calls.push(Call::Step(root));
                continue;
            };
            let Some(parts) = self.region_parts(root, &members, &leaves, &r.root.stream(), &r.leaves) else {
                return Ok(None);
            };
            let place = Place::of(&r.root.stream(), &holders);
            let fused = Fused { program: Arc::new(r.program), parts };
            calls.push(Call::Region { root, fused, leaves, place });
            regions += 1;
        }
        if regions == 0 {
            return Ok(None);
        }
        prune(&mut calls, &self.outputs, &self.steps);
        Ok(Some(FusedPlan { calls }))
    }

    /// A region's primitives as a function of its leaves: the member steps (and the
    /// constants they fold in) rebuilt over them, on the region's stream. `None` if a
    /// member reads something that is neither a leaf, a member nor a constant step (the
    /// plan is then not kept).
    fn region_parts(
        &self,
        root: usize,
        members: &[usize],
        leaves: &[Ref],
        stream: &Stream,
        leaf_arrays: &[Array],
    ) -> Option<Arc<ArrayFn>> {
        // Sub-steps: members in order, then the root; operands are leaves (as inputs),
        // earlier sub-steps, or constant steps copied in.
        let mut sub: Vec<TraceStep> = Vec::new();
        let mut index: HashMap<usize, usize> = HashMap::new();
        let const_place = Place::of(stream, leaf_arrays);
        for &k in members.iter().chain(std::iter::once(&root)) {
            let mut args = Vec::with_capacity(self.steps[k].args.len());
            for &a in &self.steps[k].args {
                let r = match leaves.iter().position(|&l| l == a) {
                    Some(i) => Ref::Input(i),
                    None => match a {
                        Ref::Step(j) if index.contains_key(&j) => Ref::Step(index[&j]),
                        // A folded constant: a step of no operands, made again here.
                        Ref::Step(j) if self.steps[j].args.is_empty() => {
                            sub.push(TraceStep { op: self.steps[j].op.clone(), args: Vec::new(), place: const_place });
                            index.insert(j, sub.len() - 1);
                            Ref::Step(sub.len() - 1)
                        }
                        Ref::Step(_) | Ref::Input(_) | Ref::Const(_) => return None,
                    },
                };
                args.push(r);
            }
            sub.push(TraceStep { op: self.steps[k].op.clone(), args, place: const_place });
            index.insert(k, sub.len() - 1);
        }
        let part = Trace {
            outputs: vec![Ref::Step(sub.len() - 1)],
            steps: sub,
            consts: Vec::new(),
            plans: Mutex::new(Lru::new()),
        };
        // Never planned: the parts are what runs when the region itself does not.
        Some(Arc::new(move |xs: &[Array]| part.replay_unplanned(xs)))
    }
}

/// Drops the calls whose value nothing later reads and no output is (a constant every
/// region folded in).
fn prune(calls: &mut Vec<Call>, outputs: &[Ref], steps: &[TraceStep]) {
    let mut live: std::collections::HashSet<usize> =
        outputs.iter().filter_map(|r| if let Ref::Step(k) = r { Some(*k) } else { None }).collect();
    let mut keep = vec![false; calls.len()];
    for (i, c) in calls.iter().enumerate().rev() {
        let (k, reads): (usize, &[Ref]) = match c {
            Call::Step(k) => (*k, &steps[*k].args),
            Call::Region { root, leaves, .. } => (*root, leaves),
        };
        if live.contains(&k) {
            keep[i] = true;
            live.extend(reads.iter().filter_map(|r| if let Ref::Step(j) = r { Some(*j) } else { None }));
        }
    }
    let mut keep = keep.into_iter();
    calls.retain(|_| keep.next().unwrap_or(false));
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
        let data = not_retaining(|| with_stream(&a.stream(), || Array::from_op(DeviceCopy, [a.clone()])))?;
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
                                let place = Place::of(&stream, stand_ins);
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
    Ok(Trace { steps, consts, outputs, plans: Mutex::new(Lru::new()) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::primitive::Rules;

    #[test]
    fn the_lru_keeps_the_most_recently_used() {
        let mut l: Lru<u32, char> = Lru::new();
        l.insert(1, 'a', 2);
        l.insert(2, 'b', 2);
        assert_eq!(l.get(&1), Some('a'));
        // 2 is now the least recently used: it goes first.
        l.insert(3, 'c', 2);
        assert_eq!((l.get(&2), l.get(&1), l.get(&3), l.len()), (None, Some('a'), Some('c'), 2));
        // A key inserted again replaces its value and does not count twice.
        l.insert(3, 'd', 2);
        assert_eq!((l.get(&3), l.len()), (Some('d'), 2));
        // At least one entry stays.
        l.insert(4, 'e', 0);
        assert_eq!((l.get(&4), l.len()), (Some('e'), 1));
    }

    /// A kept region differentiates through its parts. Transforms never meet a `Fused`
    /// node (calls inside them replay primitives), but its rules must hold all the same.
    #[test]
    fn a_kept_region_differentiates_through_its_parts() -> Result<()> {
        crate::fusion::with_enabled(true, || {
            let f = compile(|x: &[Array]| Ok(vec![(&(&x[0] * &x[1])?.exp()? * 0.5)?]));
            let (av, bv, cv) = ([0.5f32, -1.0, 2.0], [1.5f32, 0.25, -0.5], [1.0f32, 2.0, -1.0]);
            let inputs = [Array::from_slice(&av, &[3])?, Array::from_slice(&bv, &[3])?];
            let (trace, _) = f.trace_for(&inputs)?;
            let plan = trace.plan_for(&inputs).ok_or_else(|| Error::Internal("no plan".into()))?;
            let [Call::Region { fused, leaves, .. }] = plan.calls.as_slice() else {
                return Err(Error::Internal(format!("{} calls, not one region", plan.calls.len())));
            };
            assert_eq!(leaves, &[Ref::Input(0), Ref::Input(1)], "the region reads a, then b");
            let out = f.call(&inputs)?.remove(0);
            let ct = Array::from_slice(&cv, &[3])?;
            let grads = fused.vjp(&inputs, &out, &ct)?;
            let ones = Array::from_slice(&[1.0f32; 3], &[3])?;
            let tangent = fused.jvp(&inputs, &out, &[Some(ones), None])?;
            let read = |a: &Option<Array>| a.as_ref().map(|a| a.to_vec::<f32>()).transpose();
            let (da, db, t) =
                (read(&grads[0])?.unwrap_or_default(), read(&grads[1])?.unwrap_or_default(), read(&tangent)?);
            for i in 0..3 {
                // d/da (e^(ab) / 2) = b e^(ab) / 2, and likewise for b.
                let e = (av[i] as f64 * bv[i] as f64).exp() * 0.5;
                let close = |g: f32, w: f64| (g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs());
                assert!(close(da[i], cv[i] as f64 * bv[i] as f64 * e), "{da:?}");
                assert!(close(db[i], cv[i] as f64 * av[i] as f64 * e), "{db:?}");
                assert!(t.as_ref().is_some_and(|t| close(t[i], bv[i] as f64 * e)), "{t:?}");
            }
            Ok(())
        })
    }
}
