//! The fusion pass: from the topological order to a plan of single nodes and regions.

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::sync::{Arc, Weak};

use arrayvec::ArrayVec;

use super::program::{Program, Step};
use super::{Fuser, debug};
use crate::array::{Array, Node, State};
use crate::backend::backend_for;
use crate::dtype::DType;
use crate::eval::{Met, Order};
use crate::primitive::{FusionClass, Meta, Primitive, ReduceOp};
use crate::stream::Stream;

/// Bounds on a region, the one place they are set (each backend's [`Fuser`] gives its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most buffers one region binds besides its main output: distinct inputs plus extra
    /// outputs. The GPU binds each, so this is below the device's storage-buffer binding
    /// limit (the main output and the parameters take two).
    pub max_inputs: usize,
    /// Most primitives in one region: generated kernels grow with it, and so does their
    /// compile time (a 1000-op chain becomes a few kernels, not one huge one).
    pub max_steps: usize,
    /// Whether one elementwise primitive that reads an input broadcast (`e / sum` over
    /// rows) is a region on its own: worth it where generated kernels index broadcasts
    /// better than the backend's own kernels do (the GPU's are unrolled for the rank).
    pub lone_broadcasts: bool,
    /// Whether a region may hold reductions that later steps read ([`Step::Reduce`]:
    /// softmax or layer_norm as one kernel, run row by row) and members of a broadcast
    /// shape (`var + eps` per row), computed again at every element. Worth it where the
    /// kernels are memory-bound (the GPU); the CPU would pay the recomputation.
    pub row_regions: bool,
}

/// A region ready to run: its root node, the nodes it absorbed, its inputs and program.
pub(crate) struct Region {
    /// The node whose value the region produces.
    pub root: Array,
    /// The other nodes it computes, inputs before users (for the unfused fallback).
    pub members: Vec<Array>,
    /// The members the kernel also writes out, in [`Program::extra_outputs`] order.
    pub exposed: Vec<Array>,
    /// The arrays the program reads, in [`Program::inputs`] order.
    pub leaves: Vec<Array>,
    /// The constants folded into the program, with how many input slots of its nodes
    /// name each. [`plan`] leaves those that only regions read out of the plan (their
    /// values are in the kernels); the unfused fallback runs them first.
    pub consts: Vec<(Array, usize)>,
    /// What the backend compiles.
    pub program: Program,
}

/// One step of evaluation.
pub(crate) enum Plan {
    /// A node run on its own.
    Node(Weak<Node>),
    /// A fused region (boxed: it is far larger than a node's handle).
    Region(Box<Region>),
}

/// Groups the pending nodes of `order` (inputs before users) into regions where their
/// backends fuse; the result keeps the order's dependencies. `outputs` are what the
/// order was made for: they are always run.
pub(crate) fn plan(order: Order, outputs: &[&Array]) -> Vec<Plan> {
    let Order { nodes: order, met: consumers } = order;
    // Sized once: most nodes of a fusing eval end up taken.
    let mut taken: HashSet<*const Node> = HashSet::with_capacity(order.len());
    let mut regions: HashMap<*const Node, Box<Region>> = HashMap::new();
    // Consumers come after their inputs: walking backwards grows each region from its
    // last consumer, so regions are as large as the rules allow.
    // Per folded constant: input slots of region nodes naming it, and regions holding it.
    let mut folded: HashMap<*const Node, (usize, usize)> = HashMap::new();
    for w in order.iter().rev() {
        let Some(node) = w.upgrade() else { continue };
        let ptr = Arc::as_ptr(&node);
        if taken.contains(&ptr) {
            continue;
        }
        let root = Array(node);
        if let Some(region) = grow(&root, &consumers) {
            taken.insert(ptr);
            for m in &region.members {
                taken.insert(m.ptr());
            }
            for (c, slots) in &region.consts {
                let f = folded.entry(c.ptr()).or_default();
                f.0 += slots;
                f.1 += 1;
            }
            if debug() {
                eprintln!("lazuli fusion: {} on {:?}\n{}", region.root.0.op_name, region.root.stream(), region.program);
            }
            regions.insert(ptr, Box::new(region));
        }
    }
    // A constant that only regions of this eval read, and that nothing else holds (no
    // user handle, no node outside the eval), is not run: every reader has its value
    // in its kernel, and a fill per constant per eval cost an H100 5 us of GPU time each
    // (BENCHMARKS.md, session 15). It stays pending and goes with its readers. An output
    // is never left out, whatever the counts say (another thread's eval can change them).
    for w in order.iter().filter(|_| !folded.is_empty()) {
        let Some(node) = w.upgrade() else { continue };
        let ptr = Arc::as_ptr(&node);
        if let (Some(&(slots, holders)), Some(readers)) = (folded.get(&ptr), consumers.get(&ptr).map(|m| m.consumers))
            && slots == readers
            && Arc::strong_count(&node) == readers + holders + 1
            && !outputs.iter().any(|o| o.ptr() == ptr)
        {
            taken.insert(ptr);
        }
    }
    order
        .into_iter()
        .filter_map(|w| {
            let ptr = w.as_ptr();
            match regions.remove(&ptr) {
                Some(r) => Some(Plan::Region(r)),
                None if taken.contains(&ptr) => None,
                None => Some(Plan::Node(w)),
            }
        })
        .collect()
}

/// True if an eval of `a` would run `a` alone: it is pending, every input is computed
/// already, and its backend makes no region of it by itself (a lone op reading an input
/// broadcast, where [`Limits::lone_broadcasts`]). `eval` then runs it without the walk
/// and the planner: the commonest eval of all (an op on computed arrays, then a read)
/// spent a third of its instructions there (callgrind, the tiny read-back, session 17).
pub(crate) fn single(a: &Array) -> bool {
    let Some((op, inputs)) = pending(a) else { return false };
    if inputs.iter().any(Array::is_pending) {
        return false;
    }
    let lone = || {
        fuser_for(&a.stream()).is_some_and(|f| f.limits().lone_broadcasts)
            && op.fusion_class() == FusionClass::Elementwise
            && inputs.iter().any(|i| read_broadcast(i, &a.meta().shape))
    };
    !super::enabled() || !lone()
}

/// True if `a` is read broadcast at `shape` (neither one element nor of that shape): what
/// makes a lone elementwise op a region where [`Limits::lone_broadcasts`].
fn read_broadcast(a: &Array, shape: &[usize]) -> bool {
    a.meta().numel() != 1 && a.meta().shape != shape
}

/// The programs the next eval of `outputs` would run fused (with fusion on), without
/// running anything: for tests, and for backend authors checking their code generator.
pub fn programs(outputs: &[&Array]) -> Vec<Program> {
    let order = crate::eval::topo_order(outputs);
    plan(order, outputs)
        .into_iter()
        .filter_map(|p| match p {
            Plan::Region(r) => Some(r.program),
            Plan::Node(_) => None,
        })
        .collect()
}

/// A node's inputs as the planner copies them: a step takes at most three, so they fit
/// on the stack (a vector here was an allocation per node per eval).
type Inputs = ArrayVec<Array, 3>;

/// A pending node's primitive and inputs (copied: the node stays pending); `None` for a
/// node that is not pending or takes more inputs than any step.
fn pending(a: &Array) -> Option<(Primitive, Inputs)> {
    match &*a.0.lock() {
        State::Pending { op, inputs } if inputs.len() <= 3 => Some((op.clone(), inputs.iter().cloned().collect())),
        State::Pending { .. } => None,
        State::Running | State::Ready { .. } | State::Failed(_) => None,
    }
}

fn fuser_for(stream: &Stream) -> Option<&'static dyn Fuser> {
    backend_for(stream.device).ok().and_then(|b| b.fuser())
}

/// True if the backend takes `op` (with these inputs) as a region step.
fn accepted(f: &dyn Fuser, op: &Primitive, inputs: &[Array], out: &Meta) -> bool {
    // Steps take at most three inputs: their metas on the stack (the planner asks this
    // for every node of every eval).
    match inputs {
        [] => f.accepts(op, &[], out),
        [a] => f.accepts(op, &[a.meta()], out),
        [a, b] => f.accepts(op, &[a.meta(), b.meta()], out),
        [a, b, c] => f.accepts(op, &[a.meta(), b.meta(), c.meta()], out),
        many => f.accepts(op, &many.iter().map(Array::meta).collect::<Vec<_>>(), out),
    }
}

/// A one-element constant the region can fold in, whoever else holds it.
fn constant(a: &Array, stream: &Stream) -> Option<Primitive> {
    if a.stream() != *stream || a.meta().numel() != 1 {
        return None;
    }
    // Looked at in place: the planner asks this for every input of every member, and
    // `pending` would clone the node's input list each time.
    match &*a.0.lock() {
        State::Pending { op, .. } => matches!(op, Primitive::Full(_)).then(|| op.clone()),
        State::Running | State::Ready { .. } | State::Failed(_) => None,
    }
}

/// The region rooted at `root`, if it fuses more than the root alone.
fn grow(root: &Array, consumers: &HashMap<*const Node, Met>) -> Option<Region> {
    let stream = root.stream();
    let fuser = fuser_for(&stream)?;
    let limits = fuser.limits();
    let (op, inputs) = pending(root)?;
    if root.0.retain || root.meta().numel() == 0 {
        return None;
    }
    let (shape, reduction, row) = match (&op, op.fusion_class()) {
        (_, FusionClass::Elementwise) => (root.meta().shape.clone(), None, None),
        (Primitive::Reduce(r), FusionClass::Reduction) => {
            (inputs.first()?.meta().shape.clone(), Some((r.op, r.axes.clone())), Some(root.meta().shape.clone()))
        }
        _ => return None,
    };
    if !accepted(fuser, &op, &inputs, root.meta()) {
        return None;
    }
    // Nothing to absorb (every input computed already) and no reason to fuse a lone op:
    // no region, found without the tables below (an op on ready arrays, the commonest
    // eval of all, paid for them: callgrind, the tiny read-back, session 17).
    if !limits.lone_broadcasts && !inputs.iter().any(Array::is_pending) {
        return None;
    }
    let mut g = Growth {
        stream,
        shape,
        fuser,
        limits,
        consumers,
        exposes: reduction.is_none(),
        row,
        exposed: HashSet::new(),
        // Not pre-sized: most roots absorb nothing (a lone op), and a 64-entry table for
        // each of them cost more than the rehashing of long regions saves.
        members: HashMap::new(),
        refs: HashMap::new(),
        consts: HashMap::new(),
        work: Vec::new(),
    };
    g.members.insert(root.ptr(), Member::new(root.clone(), op, &inputs));
    g.add_inputs(&inputs);
    // Our copies of the root's inputs go before any reference count is compared.
    drop(inputs);
    while let Some(p) = g.work.pop() {
        g.try_absorb(p);
    }
    if g.refs.len() + g.exposed.len() > g.limits.max_inputs {
        return None;
    }
    let absorbed = g.members.len() - 1 + g.consts.len();
    // A reduction needs a prologue to gain anything; an elementwise root gains from a
    // folded constant too (one dispatch instead of two), or alone from reading an input
    // broadcast where the backend says so.
    let lone =
        g.limits.lone_broadcasts && reduction.is_none() && g.refs.values().any(|(_, a)| read_broadcast(a, &g.shape));
    if (absorbed == 0 && !lone) || (reduction.is_some() && g.members.len() == 1) {
        return None;
    }
    g.finish(root, reduction)
}

/// True if `shape` broadcasts to `target` (NumPy's rule, aligned at the last axis).
fn broadcasts_to(shape: &[usize], target: &[usize]) -> bool {
    shape.len() <= target.len() && shape.iter().rev().zip(target.iter().rev()).all(|(&s, &t)| s == t || s == 1)
}

/// The value of `step` in `steps`: with `known`, an identical step (same operation,
/// operands and dtype) computed already, else a new one. Graphs built from composite ops
/// repeat work (a layer norm's `x.var()` takes the mean `x - mean` took already): in a
/// region it is computed once, so the row kernel folds one sum where it folded two. The
/// values are the same bits either way.
fn computed(
    steps: &mut Vec<(Step, DType)>,
    known: Option<&mut HashMap<(Step, DType), usize>>,
    step: Step,
    dtype: DType,
) -> usize {
    let mut push = || {
        steps.push((step, dtype));
        steps.len() - 1
    };
    match known {
        Some(k) => *k.entry((step, dtype)).or_insert_with(push),
        None => push(),
    }
}

/// A node the region absorbed: its handle, primitive, and inputs by address (the nodes
/// themselves are in [`Growth`]'s maps: members, leaves or constants). Its input list is
/// not copied: the reference counts [`Growth::try_absorb`] compares count only the
/// nodes' own input slots and the planner's one handle per leaf.
struct Member {
    a: Array,
    op: Primitive,
    ins: ArrayVec<*const Node, 3>,
}

impl Member {
    fn new(a: Array, op: Primitive, inputs: &[Array]) -> Member {
        Member { a, op, ins: inputs.iter().map(Array::ptr).collect() }
    }
}

struct Growth<'a> {
    stream: Stream,
    shape: Vec<usize>,
    fuser: &'static dyn Fuser,
    limits: Limits,
    /// What the eval's walk met: each node's consumers in the eval.
    consumers: &'a HashMap<*const Node, Met>,
    /// Whether members may be written out as extra outputs (not with a reduction).
    exposes: bool,
    /// The shape of the region's reductions (the root's output, or the first absorbed
    /// [`Step::Reduce`]'s): every reduction of a region reduces the same axes.
    row: Option<Vec<usize>>,
    /// Members something outside the region holds: written out as extra outputs.
    exposed: HashSet<*const Node>,
    /// Absorbed nodes (the root included).
    members: HashMap<*const Node, Member>,
    /// Inputs of members that are not members: how many times members' input lists name
    /// them, and one handle (ours, counted when comparing with the node's references).
    refs: HashMap<*const Node, (usize, Array)>,
    /// Folded constants: their primitive, a handle, and the input slots of members
    /// naming them.
    consts: HashMap<*const Node, (Primitive, Array, usize)>,
    work: Vec<*const Node>,
}

impl Growth<'_> {
    /// Records the `inputs` of a new member as leaves or constants, and queues the leaves.
    fn add_inputs(&mut self, inputs: &[Array]) {
        for i in inputs {
            let p = i.ptr();
            if let Some(c) = self.consts.get_mut(&p) {
                c.2 += 1;
                continue;
            }
            if self.members.contains_key(&p) {
                continue;
            }
            if let Some(c) = constant(i, &self.stream) {
                self.refs.remove(&p);
                self.consts.insert(p, (c, i.clone(), 1));
                continue;
            }
            self.refs.entry(p).or_insert_with(|| (0, i.clone())).0 += 1;
            self.work.push(p);
        }
    }

    /// Buffers the region would bind (besides its main output) if one leaf were absorbed,
    /// its `inputs` added, and `exposing` it as an extra output.
    fn bindings_after(&self, inputs: &[Array], exposing: bool) -> usize {
        // Distinct new leaves, by a scan (a step has at most three inputs).
        let new = (0..inputs.len())
            .filter(|&k| {
                let p = inputs[k].ptr();
                !inputs[..k].iter().any(|e| e.ptr() == p)
                    && !self.members.contains_key(&p)
                    && !self.consts.contains_key(&p)
                    && !self.refs.contains_key(&p)
            })
            .count();
        self.refs.len() - 1 + new + self.exposed.len() + usize::from(exposing)
    }

    fn try_absorb(&mut self, p: *const Node) {
        let Some((count, a)) = self.refs.get(&p) else { return };
        let (count, a) = (*count, a.clone());
        // Members are at the region's shape; with row regions also of a shape that
        // broadcasts to it (computed again at every element) or reductions of a value at
        // it (checked below, with their primitive).
        let at_shape = a.meta().shape == self.shape;
        let broadcast = !at_shape && self.limits.row_regions && broadcasts_to(&a.meta().shape, &self.shape);
        if self.members.len() >= self.limits.max_steps
            || a.stream() != self.stream
            || !(at_shape || broadcast)
            || a.0.retain
        {
            return;
        }
        // Held only by the `count` input slots of members naming it, our handle in `refs`
        // and `a` just now: nothing outside the region needs it.
        // Otherwise it may still join as an extra output, if no node of this eval outside
        // the region consumes it (such a node would run before the region, or feed it:
        // another region's leaf list counts here too, through its member). Extra outputs
        // are at the region's shape.
        let held_outside = Arc::strong_count(&a.0) != count + 2;
        if held_outside && (!self.exposes || !at_shape || self.consumers.get(&p).map(|m| m.consumers) != Some(count)) {
            return;
        }
        let Some((op, inputs)) = pending(&a) else { return };
        let reduces = matches!(op, Primitive::Reduce(_));
        // A reduction reads a value at the region's shape and gives the region's row
        // shape (the first one absorbed sets it).
        if reduces
            && (!broadcast
                || inputs.first().is_none_or(|i| i.meta().shape != self.shape)
                || self.row.as_ref().is_some_and(|r| *r != a.meta().shape))
        {
            return;
        }
        if !Step::fits(&op, inputs.len())
            || !accepted(self.fuser, &op, &inputs, a.meta())
            || self.bindings_after(&inputs, held_outside) > self.limits.max_inputs
        {
            return;
        }
        if reduces {
            self.row = Some(a.meta().shape.clone());
        }
        self.refs.remove(&p);
        if held_outside {
            self.exposed.insert(p);
        }
        if self.members.len() == 1 {
            // A region after all: room for a typical one at once, not rehashing at 3,
            // 7, 14 and 28 members (callgrind, the 1000-op chain, session 17).
            self.members.reserve(16);
        }
        self.members.insert(p, Member::new(a, op, &inputs));
        self.add_inputs(&inputs);
    }

    /// The program: members in dependency order from the root, inputs numbered as met.
    /// `None` only if a member is not a step after all (absorbing checks that it is).
    fn finish(mut self, root: &Array, reduction: Option<(ReduceOp, Vec<usize>)>) -> Option<Region> {
        let values_len = self.members.len() + self.consts.len() + self.refs.len();
        let mut values: HashMap<*const Node, usize> = HashMap::with_capacity(values_len);
        let mut steps = Vec::with_capacity(values_len);
        let mut leaves: Vec<Array> = Vec::with_capacity(self.refs.len());
        let mut metas = Vec::with_capacity(self.refs.len());
        let mut order = Vec::with_capacity(self.members.len());
        let (mut extra_outputs, mut exposed) = (Vec::new(), Vec::new());
        let mut result = usize::MAX;
        // Each distinct step once (see `computed`), in programs that reduce: there a
        // repeated reduction costs a fold through workgroup memory, while in an
        // elementwise region a repeat costs one more operation per element, less than
        // the lookup costs the host per step (callgrind: +2% on the 1000-op chain).
        let mut known = (reduction.is_some() || self.row.is_some())
            .then(|| HashMap::<(Step, DType), usize>::with_capacity(values_len));
        let root_ptr = root.ptr();
        // Iterative post-order over members, by address; leaves and constants become
        // values as met.
        let mut stack = vec![(root_ptr, false)];
        while let Some((p, expanded)) = stack.pop() {
            if values.contains_key(&p) {
                continue;
            }
            if let Some((c, a, _)) = self.consts.get(&p) {
                let step = Step::of(c, &[]).expect("folded constants are Full");
                values.insert(p, computed(&mut steps, known.as_mut(), step, a.dtype()));
                continue;
            }
            let Some(m) = self.members.get(&p) else {
                // Every input of a member is a member, a constant or a leaf.
                let (_, a) = self.refs.get(&p)?;
                values.insert(p, steps.len());
                steps.push((Step::Input(leaves.len()), a.dtype()));
                metas.push(a.meta().clone());
                leaves.push(a.clone());
                continue;
            };
            if expanded {
                let args: ArrayVec<usize, 3> = m.ins.iter().map(|i| values[i]).collect();
                if reduction.is_some() && p == root_ptr {
                    // The reduction root is the program's `reduction`, not a step.
                    result = *args.first()?;
                    continue;
                }
                let v = computed(&mut steps, known.as_mut(), Step::of(&m.op, &args)?, m.a.dtype());
                values.insert(p, v);
                if p != root_ptr {
                    if self.exposed.contains(&p) {
                        extra_outputs.push(v);
                        exposed.push(m.a.clone());
                    }
                    order.push(m.a.clone());
                }
                continue;
            }
            stack.push((p, true));
            for &i in m.ins.iter().rev() {
                if !values.contains_key(&i) {
                    stack.push((i, false));
                }
            }
        }
        self.refs.clear();
        if reduction.is_none() {
            result = values[&root_ptr];
        }
        // The root's axes, or those the row shape of the absorbed reductions keeps as 1.
        let reduce_axes = match (&reduction, &self.row) {
            (Some((_, axes)), _) => axes.clone(),
            (None, Some(row)) => (0..self.shape.len()).filter(|&d| row[d] == 1 && self.shape[d] != 1).collect(),
            (None, None) => Vec::new(),
        };
        let program = Program {
            shape: self.shape,
            inputs: metas,
            steps,
            result,
            reduction: reduction.map(|(op, _)| op),
            reduce_axes,
            output: root.meta().clone(),
            extra_outputs,
        };
        let consts = self.consts.into_values().map(|(_, a, slots)| (a, slots)).collect();
        Some(Region { root: root.clone(), members: order, exposed, leaves, consts, program })
    }
}
