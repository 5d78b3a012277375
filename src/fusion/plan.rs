//! The fusion pass: from the topological order to a plan of single nodes and regions.

use foldhash::{HashMap, HashMapExt};
use std::sync::{Arc, Weak};

use arrayvec::ArrayVec;

use super::program::{Program, Step};
use super::{Fuser, debug};
use crate::array::{Array, Inputs, Node, State};
use crate::backend::backend_for;
use crate::dtype::DType;
use crate::eval::{Met, Order};
use crate::primitive::{FusionClass, Meta, Primitive, ReduceOp};
use crate::shape::Shape;
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
    let Order { order, nodes } = order;
    let mut taken = vec![false; nodes.len()];
    let mut slots = vec![Slot::UNSEEN; nodes.len()];
    // Regions by root, in the order found: the reverse of the order's.
    let mut regions: Vec<(u32, Box<Region>)> = Vec::new();
    // Per folded constant: input slots of region nodes naming it, and regions holding it.
    let mut folded: Vec<(u32, u32)> = Vec::new();
    // Each attempt stamps the slots it uses with its own number (from 1): none are
    // cleared, and an attempt that made no region leaves stamps no later one reads.
    let mut attempt = 0;
    let mut lists = Lists::default();
    // Consumers come after their inputs: walking backwards grows each region from its
    // last consumer, so regions are as large as the rules allow.
    for &root in order.iter().rev() {
        if taken[root as usize] {
            continue;
        }
        attempt += 1;
        let Some(mut g) = Growth::start(&nodes, &mut slots, &mut lists, attempt, root) else { continue };
        let Some(r) = g.finish(root) else { continue };
        for &(m, _) in &g.lists.members {
            taken[m as usize] = true;
        }
        if !g.lists.consts.is_empty() && folded.is_empty() {
            folded = vec![(0, 0); nodes.len()];
        }
        for &(c, _) in &g.lists.consts {
            let f = &mut folded[c as usize];
            f.0 += g.slots[c as usize].count;
            f.1 += 1;
        }
        if debug() {
            eprintln!("lazuli fusion: {} on {:?}\n{}", r.root.0.op_name, r.root.stream(), r.program);
        }
        regions.push((root, Box::new(r)));
    }
    // A constant that only regions of this eval read, and that nothing else holds (no
    // user handle, no node outside the eval), is not run: every reader has its value
    // in its kernel, and a fill per constant per eval cost an H100 5 us of GPU time each
    // (BENCHMARKS.md, session 15). It stays pending and goes with its readers. An output
    // is never left out, whatever the counts say (another thread's eval can change them).
    // (The references: one per reading slot, one per region holding it, the walk's.)
    for &id in order.iter().filter(|_| !folded.is_empty()) {
        let (slots, holders) = folded[id as usize];
        let met = &nodes[id as usize];
        if holders > 0
            && slots == met.consumers
            && Arc::strong_count(&met.array.0) == (met.consumers + holders) as usize + 1
            && !outputs.iter().any(|o| o.ptr() == met.array.ptr())
        {
            taken[id as usize] = true;
        }
    }
    order
        .iter()
        .filter_map(|&id| {
            if regions.last().is_some_and(|(r, _)| *r == id) {
                return regions.pop().map(|(_, r)| Plan::Region(r));
            }
            (!taken[id as usize]).then(|| Plan::Node(Arc::downgrade(&nodes[id as usize].array.0)))
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
    a.meta().numel() != 1 && a.meta().shape[..] != *shape
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

/// A pending node's primitive and inputs (copied, inline: the node stays pending); `None`
/// for a node that is not pending or takes more inputs than any step.
fn pending(a: &Array) -> Option<(Primitive, Inputs)> {
    match &*a.0.lock() {
        State::Pending { op, inputs } if inputs.len() <= 3 => Some((op.clone(), inputs.iter().cloned().collect())),
        State::Pending { .. } => None,
        State::Running { .. } | State::Ready { .. } | State::Failed(_) => None,
    }
}

/// A node's primitive while it is pending (another thread may have run it since the walk).
fn pending_op(a: &Array) -> Option<Primitive> {
    match &*a.0.lock() {
        State::Pending { op, .. } => Some(op.clone()),
        State::Running { .. } | State::Ready { .. } | State::Failed(_) => None,
    }
}

/// The step node `a` (pending, with inputs numbered `ins`) would be in a region whose
/// backend has `fuser`, its operands not yet numbered; `None` if it is not pending, is no
/// step, or the fuser does not take it. Looked at under the node's lock: cloning the
/// primitive for every member was a tenth of the planner (callgrind, the 1000-op chain).
fn pending_step(a: &Array, ins: &[u32], nodes: &[Met], fuser: &dyn Fuser) -> Option<Step> {
    match &*a.0.lock() {
        State::Pending { op, .. } => {
            let step = unnumbered(op, ins.len())?;
            fuser.accepts(op, &metas(nodes, ins), a.meta()).then_some(step)
        }
        State::Running { .. } | State::Ready { .. } | State::Failed(_) => None,
    }
}

/// The step `op` with `inputs` operands is, its operands not yet numbered (the planner
/// numbers them when it writes the program: [`Step::with_args`]).
fn unnumbered(op: &Primitive, inputs: usize) -> Option<Step> {
    Step::of(op, [0; 3].get(..inputs)?)
}

fn fuser_for(stream: &Stream) -> Option<&'static dyn Fuser> {
    backend_for(stream.device).ok().and_then(|b| b.fuser())
}

/// The metas of the nodes numbered `ids`, on the stack (steps take at most three inputs;
/// the planner asks for them for every node of every eval).
fn metas<'a>(nodes: &'a [Met], ids: &[u32]) -> ArrayVec<&'a Meta, 3> {
    ids.iter().map(|&i| nodes[i as usize].array.meta()).collect()
}

/// A one-element constant the region can fold in, whoever else holds it, as its step.
fn constant(a: &Array, stream: &Stream) -> Option<Step> {
    if a.stream() != *stream || a.meta().numel() != 1 {
        return None;
    }
    // Looked at in place: the planner asks this for every input of every member, and
    // `pending` would clone the node's input list each time.
    match &*a.0.lock() {
        State::Pending { op: Primitive::Full(f), .. } => Some(Step::Const(f.value)),
        State::Pending { .. } => None,
        State::Running { .. } | State::Ready { .. } | State::Failed(_) => None,
    }
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

/// What the region being grown knows of a node: set when the region first reaches it,
/// and meaningful only while `region` is that region's number (a stale stamp reads as
/// unseen, so no slot is cleared between regions).
#[derive(Clone, Copy)]
struct Slot {
    region: u32,
    role: Role,
    /// Input slots of the region's members naming it.
    count: u32,
    /// Where it sits in the region's members or constants list.
    at: u32,
    /// Its value in the program ([`Growth::finish`]); [`Slot::NO_VALUE`] until computed.
    value: u32,
}

impl Slot {
    /// No region has seen the node (regions are numbered from 1).
    const UNSEEN: Slot = Slot { region: 0, role: Role::Leaf, count: 0, at: 0, value: Slot::NO_VALUE };
    const NO_VALUE: u32 = u32::MAX;
}

/// What a node is to the region that reached it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// An input of members, computed outside the region (unless absorbed later).
    Leaf,
    /// Absorbed; `exposed` when something outside the region holds it, so the kernel
    /// writes it out as an extra output.
    Member { exposed: bool },
    /// A one-element `Full` folded into the program.
    Const,
}

/// A region being grown from its root, over the walk's node numbers.
struct Growth<'a> {
    nodes: &'a [Met],
    slots: &'a mut [Slot],
    /// This region's number, stamped on the slots it uses.
    region: u32,
    stream: Stream,
    shape: Shape,
    fuser: &'static dyn Fuser,
    limits: Limits,
    /// The root's reduction (op and axes) when the root reduces.
    reduction: Option<(ReduceOp, Vec<usize>)>,
    /// The shape of the region's reductions (the root's output, or the first absorbed
    /// [`Step::Reduce`]'s): every reduction of a region reduces the same axes.
    row: Option<Shape>,
    /// The region's lists (members, leaves, constants, work).
    lists: &'a mut Lists,
    /// Leaves not absorbed: the region's distinct inputs.
    open: usize,
    /// Members written out as extra outputs.
    exposed: usize,
}

/// The lists a region is grown in, kept across the attempts of one plan: growing into
/// fresh vectors was a few allocations per region and per lone root.
#[derive(Default)]
struct Lists {
    /// Absorbed nodes, the root first, with their steps (operands not yet numbered).
    members: Vec<(u32, Step)>,
    /// Every node met as a leaf, in order; those absorbed since are members (their slot
    /// says which).
    leaves: Vec<u32>,
    /// Folded constants with their steps.
    consts: Vec<(u32, Step)>,
    /// Leaves to try absorbing (again: a leaf named by one more member may pass now).
    work: Vec<u32>,
}

impl Lists {
    fn clear(&mut self) {
        self.members.clear();
        self.leaves.clear();
        self.consts.clear();
        self.work.clear();
    }
}

impl<'a> Growth<'a> {
    /// The region rooted at node `root`, grown as far as the rules allow; `None` if it
    /// would fuse nothing more than the root alone.
    fn start(
        nodes: &'a [Met],
        slots: &'a mut [Slot],
        lists: &'a mut Lists,
        region: u32,
        root: u32,
    ) -> Option<Growth<'a>> {
        let met = &nodes[root as usize];
        let a = &met.array;
        let stream = a.stream();
        let fuser = fuser_for(&stream)?;
        let limits = fuser.limits();
        let ins = met.inputs.as_ref()?;
        if a.0.retain || a.meta().numel() == 0 {
            return None;
        }
        let op = pending_op(a)?;
        let (shape, reduction, row) = match (&op, op.fusion_class()) {
            (_, FusionClass::Elementwise) => (a.meta().shape.clone(), None, None),
            (Primitive::Reduce(r), FusionClass::Reduction) => {
                let x = &nodes[*ins.first()? as usize].array;
                (x.meta().shape.clone(), Some((r.op, r.axes.clone())), Some(a.meta().shape.clone()))
            }
            _ => return None,
        };
        let step = unnumbered(&op, ins.len())?;
        if !fuser.accepts(&op, &metas(nodes, ins), a.meta()) {
            return None;
        }
        // Nothing to absorb (every input computed already) and no reason to fuse a lone
        // op: no region.
        if !limits.lone_broadcasts && !ins.iter().any(|&i| nodes[i as usize].pending) {
            return None;
        }
        slots[root as usize] = Slot { region, role: Role::Member { exposed: false }, ..Slot::UNSEEN };
        let mut g =
            Growth { nodes, slots, region, stream, shape, fuser, limits, reduction, row, lists, open: 0, exposed: 0 };
        g.lists.clear();
        g.lists.members.push((root, step));
        g.add_inputs(ins);
        while let Some(p) = g.lists.work.pop() {
            g.try_absorb(p);
        }
        if g.open + g.exposed > g.limits.max_inputs {
            return None;
        }
        let absorbed = g.lists.members.len() - 1 + g.lists.consts.len();
        // A reduction needs a prologue to gain anything; an elementwise root gains from a
        // folded constant too (one dispatch instead of two), or alone from reading an
        // input broadcast where the backend says so.
        let lone = g.limits.lone_broadcasts
            && g.reduction.is_none()
            && g.lists
                .leaves
                .iter()
                .any(|&l| g.is(l, Role::Leaf) && read_broadcast(&nodes[l as usize].array, &g.shape));
        if (absorbed == 0 && !lone) || (g.reduction.is_some() && g.lists.members.len() == 1) {
            return None;
        }
        Some(g)
    }

    /// True if this region has seen node `i` in `role`.
    fn is(&self, i: u32, role: Role) -> bool {
        let s = &self.slots[i as usize];
        s.region == self.region && s.role == role
    }

    /// Records the `inputs` of a new member as leaves or constants, and queues the leaves.
    fn add_inputs(&mut self, inputs: &[u32]) {
        for &i in inputs {
            let s = &mut self.slots[i as usize];
            if s.region == self.region {
                match s.role {
                    Role::Member { .. } => {}
                    Role::Const => s.count += 1,
                    Role::Leaf => {
                        s.count += 1;
                        self.lists.work.push(i);
                    }
                }
                continue;
            }
            let a = &self.nodes[i as usize].array;
            if let Some(c) = constant(a, &self.stream) {
                *s = Slot {
                    region: self.region,
                    role: Role::Const,
                    count: 1,
                    at: self.lists.consts.len() as u32,
                    ..Slot::UNSEEN
                };
                self.lists.consts.push((i, c));
                continue;
            }
            *s = Slot { region: self.region, role: Role::Leaf, count: 1, ..Slot::UNSEEN };
            self.lists.leaves.push(i);
            self.open += 1;
            self.lists.work.push(i);
        }
    }

    /// Buffers the region would bind (besides its main output) if one leaf were absorbed,
    /// its `inputs` added, and `exposing` it as an extra output.
    fn bindings_after(&self, inputs: &[u32], exposing: bool) -> usize {
        // Distinct nodes the region has not met (a step has at most three inputs).
        let new = (0..inputs.len())
            .filter(|&k| !inputs[..k].contains(&inputs[k]) && self.slots[inputs[k] as usize].region != self.region)
            .count();
        self.open - 1 + new + self.exposed + usize::from(exposing)
    }

    fn try_absorb(&mut self, p: u32) {
        if !self.is(p, Role::Leaf) {
            return;
        }
        let count = self.slots[p as usize].count;
        let nodes = self.nodes;
        let met = &nodes[p as usize];
        let a = &met.array;
        // Members are at the region's shape; with row regions also of a shape that
        // broadcasts to it (computed again at every element) or reductions of a value at
        // it (checked below, with their primitive).
        let at_shape = crate::shape::same(&a.meta().shape, &self.shape);
        let broadcast = !at_shape && self.limits.row_regions && broadcasts_to(&a.meta().shape, &self.shape);
        if self.lists.members.len() >= self.limits.max_steps
            || a.stream() != self.stream
            || !(at_shape || broadcast)
            || a.0.retain
        {
            return;
        }
        // Held only by the `count` input slots of members naming it and the walk's
        // handle: nothing outside the region needs it.
        // Otherwise it may still join as an extra output, if no node of this eval outside
        // the region consumes it (such a node would run before the region, or feed it:
        // another region's leaf list counts here too, through its member). Extra outputs
        // are at the region's shape.
        let held_outside = Arc::strong_count(&a.0) != count as usize + 1;
        if held_outside && (!self.exposes() || !at_shape || met.consumers != count) {
            return;
        }
        let Some(ins) = met.inputs.as_ref() else { return };
        let Some(step) = pending_step(a, ins, nodes, self.fuser) else { return };
        let reduces = matches!(step, Step::Reduce(..));
        // A reduction reads a value at the region's shape and gives the region's row
        // shape (the first one absorbed sets it).
        if reduces
            && (!broadcast
                || ins.first().is_none_or(|&i| nodes[i as usize].array.meta().shape != self.shape)
                || self.row.as_ref().is_some_and(|r| *r != a.meta().shape))
        {
            return;
        }
        if self.bindings_after(ins, held_outside) > self.limits.max_inputs {
            return;
        }
        if reduces {
            self.row = Some(a.meta().shape.clone());
        }
        let s = &mut self.slots[p as usize];
        s.role = Role::Member { exposed: held_outside };
        s.at = self.lists.members.len() as u32;
        self.open -= 1;
        self.exposed += usize::from(held_outside);
        self.lists.members.push((p, step));
        self.add_inputs(ins);
    }

    /// Whether members may be written out as extra outputs: not with a reduction root.
    fn exposes(&self) -> bool {
        self.reduction.is_none()
    }

    /// The program: members in dependency order from the root, inputs numbered as met.
    /// `None` only if a member is not a step after all (absorbing checks that it is).
    fn finish(&mut self, root: u32) -> Option<Region> {
        let nodes = self.nodes;
        let n = self.lists.members.len() + self.lists.consts.len() + self.open;
        let mut steps = Vec::with_capacity(n);
        let mut leaves: Vec<Array> = Vec::with_capacity(self.open);
        let mut metas = Vec::with_capacity(self.open);
        let mut order = Vec::with_capacity(self.lists.members.len());
        let (mut extra_outputs, mut exposed) = (Vec::new(), Vec::new());
        let mut result = Slot::NO_VALUE as usize;
        let reduction = self.reduction.take();
        // Each distinct step once (see `computed`), in programs that reduce: there a
        // repeated reduction costs a fold through workgroup memory, while in an
        // elementwise region a repeat costs one more operation per element, less than
        // the lookup costs the host per step (callgrind: +2% on the 1000-op chain).
        let mut known =
            (reduction.is_some() || self.row.is_some()).then(|| HashMap::<(Step, DType), usize>::with_capacity(n));
        // Iterative post-order over members; leaves and constants become values as met.
        let mut stack = vec![(root, false)];
        while let Some((p, expanded)) = stack.pop() {
            let s = self.slots[p as usize];
            if s.value != Slot::NO_VALUE {
                continue;
            }
            let a = &nodes[p as usize].array;
            let value = match s.role {
                Role::Const => computed(&mut steps, known.as_mut(), self.lists.consts[s.at as usize].1, a.dtype()),
                Role::Leaf => {
                    steps.push((Step::Input(leaves.len()), a.dtype()));
                    metas.push(a.meta().clone());
                    leaves.push(a.clone());
                    steps.len() - 1
                }
                Role::Member { exposed: out } => {
                    let ins = nodes[p as usize].inputs.as_ref()?;
                    if !expanded {
                        stack.push((p, true));
                        for &i in ins.iter().rev() {
                            if self.slots[i as usize].value == Slot::NO_VALUE {
                                stack.push((i, false));
                            }
                        }
                        continue;
                    }
                    let args: ArrayVec<usize, 3> = ins.iter().map(|&i| self.slots[i as usize].value as usize).collect();
                    if reduction.is_some() && p == root {
                        // The reduction root is the program's `reduction`, not a step.
                        result = *args.first()?;
                        continue;
                    }
                    let v = computed(
                        &mut steps,
                        known.as_mut(),
                        self.lists.members[s.at as usize].1.with_args(&args)?,
                        a.dtype(),
                    );
                    if p != root {
                        if out {
                            extra_outputs.push(v);
                            exposed.push(a.clone());
                        }
                        order.push(a.clone());
                    }
                    v
                }
            };
            self.slots[p as usize].value = u32::try_from(value).ok()?;
        }
        if reduction.is_none() {
            result = self.slots[root as usize].value as usize;
        }
        // The root's axes, or those the row shape of the absorbed reductions keeps as 1.
        let reduce_axes = match (&reduction, &self.row) {
            (Some((_, axes)), _) => axes.clone(),
            (None, Some(row)) => (0..self.shape.len()).filter(|&d| row[d] == 1 && self.shape[d] != 1).collect(),
            (None, None) => Vec::new(),
        };
        let root = &nodes[root as usize].array;
        let program = Program {
            shape: self.shape.to_vec(),
            inputs: metas,
            steps,
            result,
            reduction: reduction.map(|(op, _)| op),
            reduce_axes,
            output: root.meta().clone(),
            extra_outputs,
        };
        let consts = self
            .lists
            .consts
            .iter()
            .map(|&(c, _)| (nodes[c as usize].array.clone(), self.slots[c as usize].count as usize))
            .collect();
        Some(Region { root: root.clone(), members: order, exposed, leaves, consts, program })
    }
}
