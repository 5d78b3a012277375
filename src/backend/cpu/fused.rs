//! Fused regions on the CPU: one pass over the output in chunks, each value of the
//! program computed chunk by chunk, so no full-size temporary exists between steps.
//!
//! Each step runs the slice kernel its unfused primitive runs ([`elementwise`]'s
//! `*_into` functions), on a chunk, so fused and unfused results are identical (bit for
//! bit) on the CPU. A thread task allocates its scratch buffers once (one per value live
//! at a time, [`assign_slots`]) and reuses them for every chunk it runs; contiguous inputs
//! are read in place, and the result and the extra outputs are written straight into
//! their outputs, so a chunk allocates nothing but the list of its extra outputs' slices
//! (and a copy for a cast).
//!
//! A region rooted at a reduction over trailing axes (`sum((x - mean)^2)` of var,
//! `sum(exp(x - max))` of logsumexp) computes its prologue chunk by chunk the same way and
//! folds each chunk's row segments in f64 as the unfused kernels do (`reduce_fast`), so
//! the prologue's values are never written out. The accuracy bound is the unfused sum's;
//! the order of the f64 additions differs, so a result may differ from the unfused one
//! where the f64 sum lies next to an f32 rounding boundary.

use rayon::prelude::*;

use super::elementwise::{self, Operand};
use super::reduce_fast::{fold_vectorized, nan_max, nan_min, with_monoid};
use super::slices::{Dst, Src, SrcElem, chunks, dst, with_dst, with_src};
use super::storage::{CpuData, CpuElem};
use super::{PAR_MIN, data, wrap};
use crate::backend::{Buffer, Input};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::fusion::{Fuser, Limits, Program, Step};
use crate::primitive::{Meta, Primitive, ReduceOp};
use crate::shape::{StridedIter, broadcast_strides, numel};
use crate::stream::Stream;

/// Elements per chunk of an elementwise region: 32 KiB of f32 per live value, in L2.
/// Longer runs per array suit the hardware prefetchers: from 2048, 1M- to 16M-element
/// `tanh(exp(a*b+c)*0.5)` ran 1.2-1.4x faster with its four temporaries written out and
/// 1.05-1.2x without (2-core EPYC, session 24); 512 was 1.3x slower, 16384 no faster.
const CHUNK: usize = 8192;

/// Elements per chunk of a reduction's prologue, folded as soon as computed: in L1
/// (8192 cost `var` over rows of 1024 about a tenth).
const REDUCE_CHUNK: usize = 2048;

/// Elements per thread task: a 1M-element region makes 32 tasks (even load on 2 or 16
/// cores), and each pays for its scratch once.
const TASK: usize = 32 * 1024;

/// The CPU's fuser.
pub(crate) struct CpuFuser;

impl Fuser for CpuFuser {
    fn limits(&self) -> Limits {
        // No binding limit on the CPU. The step bound: each region costs the host a plan and
        // an interpreter set-up, so longer regions amortise them (the 1000-op chain in 4
        // regions, not 16 at 64 steps: 5% fewer instructions, callgrind, session 18), and
        // scratch is assigned by liveness (`assign_slots`), so a long chain still keeps two
        // chunks. A wide region keeps at most one chunk per live value: 8 MiB of f32 a task at 256.
        Limits { max_inputs: 16, max_steps: 256, lone_broadcasts: false, row_regions: false }
    }

    fn accepts(&self, op: &Primitive, inputs: &[&Meta], output: &Meta) -> bool {
        // Every elementwise step runs its own kernel per chunk, so every dtype works.
        match op {
            Primitive::Full(_) | Primitive::Unary(_) | Primitive::Binary(_) | Primitive::Select(_) => true,
            Primitive::AsType(_) => true,
            // f32 reductions over trailing axes: rows are runs of the region's flat order.
            Primitive::Reduce(r) => {
                inputs.first().is_some_and(|m| m.dtype == DType::F32 && trailing(&m.shape, &r.axes))
                    && output.dtype == DType::F32
            }
            Primitive::Arange(_)
            | Primitive::RandomBits(_)
            | Primitive::Reshape(_)
            | Primitive::AsStrided(_)
            | Primitive::Copy(_)
            | Primitive::ArgReduce(_)
            | Primitive::Scan(_)
            | Primitive::Concatenate(_)
            | Primitive::Gather(_)
            | Primitive::Scatter(_)
            | Primitive::Matmul(_)
            | Primitive::Marker(_)
            | Primitive::Fused(_) => false,
        }
    }

    fn run(&self, _stream: &Stream, program: &Program, inputs: &[Input<'_>]) -> Result<Vec<Buffer>> {
        let ins: Vec<&CpuData> = inputs.iter().map(|i| data(i.buffer)).collect::<Result<_>>()?;
        if let Some(op) = program.reduction {
            // Checked as if the prologue's values were stored, as the unfused kernels store
            // them: fusion changes neither results nor which evals fail (a sum over 2^42
            // broadcast elements is an out-of-memory error, not hours of folding).
            let what = || format!("cpu: a fused reduction over shape {:?}", program.shape);
            let bytes = crate::shape::check_size("fused", &program.shape, DType::F32)?;
            crate::memory::CPU.check(what, bytes as u64)?;
            super::probe_bytes(bytes, what)?;
            let out = reduce(&Ctx::new(program, ins)?, op, program.output.numel(), numel(&program.shape))?;
            return Ok(vec![wrap(CpuData::F32(out))]);
        }
        let what = || format!("cpu: a fused region of shape {:?}", program.output.shape);
        let mut out_bytes = crate::shape::check_size("fused", &program.output.shape, program.output.dtype)?;
        for &v in &program.extra_outputs {
            out_bytes += crate::shape::check_size("fused", &program.shape, program.steps[v].1)?;
        }
        crate::memory::CPU.check(what, out_bytes as u64)?;
        super::probe_bytes(out_bytes, what)?;
        let cx = Ctx::new(program, ins)?;
        let n = program.output.numel();
        // Extra outputs are written in place by the steps that compute them (`Home::Extra`),
        // as the unfused kernels write theirs, so their stores overlap the math. (Computed
        // in scratch and copied out after, the copies were a third of
        // `tanh(exp(a*b+c)*0.5)`'s time with its four temporaries held, which ran slower
        // fused than unfused: perf, session 24.) No output takes a pass of its own: pooled
        // vectors keep their old values, new large ones are zero pages (zeroing each output
        // chunk before the steps ran was 7% of that chain's profile, and on the calling
        // thread 15-19%: perf, sessions 15 and 24).
        let mut out = CpuData::output(program.output.dtype, n);
        let mut extras: Vec<CpuData> =
            program.extra_outputs.iter().map(|&v| CpuData::output(program.steps[v].1, n)).collect();
        // Each extra output cut into the same tasks as the main one.
        let mut tasks: Vec<Vec<Dst<'_>>> = (0..n.div_ceil(TASK)).map(|_| Vec::new()).collect();
        for e in &mut extras {
            for (t, d) in tasks.iter_mut().zip(chunks(e, TASK)) {
                t.push(d);
            }
        }
        drive(n, &cx, chunks(&mut out, TASK), tasks)?;
        Ok(std::iter::once(out).chain(extras).map(wrap).collect())
    }
}

/// True if `axes` of `shape` are trailing: after every kept axis longer than 1.
fn trailing(shape: &[usize], axes: &[usize]) -> bool {
    let first = (0..shape.len()).find(|&d| axes.contains(&d) && shape[d] > 1).unwrap_or(shape.len());
    (first..shape.len()).all(|d| axes.contains(&d) || shape[d] == 1)
}

/// A region rooted at a reduction over trailing axes: `rows` results of `total / rows`
/// elements each, the program's result folded per row in f64. Tasks are whole rows (at
/// least a task's worth of elements) or fixed blocks of one long row, combined in order,
/// so the result does not depend on the number of threads.
fn reduce(cx: &Ctx<'_>, op: ReduceOp, rows: usize, total: usize) -> Result<Vec<f32>> {
    if cx.p.steps.get(cx.p.result).map(|s| s.1) != Some(DType::F32) || cx.p.reduces_inside() {
        return Err(Error::unsupported("cpu", "this fused reduction"));
    }
    let len = total / rows.max(1);
    let block = TASK;
    let tasks: Vec<(usize, usize)> = if len >= block {
        (0..rows)
            .flat_map(|r| (0..len).step_by(block).map(move |b| (r * len + b, r * len + (b + block).min(len))))
            .collect()
    } else {
        let per = (block / len.max(1)).max(1);
        (0..rows).step_by(per).map(|r| (r * len, (r + per).min(rows) * len)).collect()
    };
    with_monoid!(op, |id, f| reduce_with(cx, &tasks, rows, len, total, id, f))
}

fn reduce_with<F>(
    cx: &Ctx<'_>,
    tasks: &[(usize, usize)],
    rows: usize,
    len: usize,
    total: usize,
    id: f64,
    f: F,
) -> Result<Vec<f32>>
where
    F: Fn(f64, f64) -> f64 + Copy + Sync + Send,
{
    // Each task's (row, partial) pairs, in order.
    let run = |&(a, b): &(usize, usize)| -> Result<Vec<(usize, f64)>> {
        let mut scratch = cx.scratch(REDUCE_CHUNK);
        let mut vals = vec![0f32; REDUCE_CHUNK];
        let mut parts: Vec<(usize, f64)> = Vec::new();
        let mut at = a;
        while at < b {
            let l = REDUCE_CHUNK.min(b - at);
            cx.chunk(at, l, &mut scratch, Dst::F32(&mut vals[..l]), &mut [])?;
            let mut i = 0;
            while i < l {
                let row = (at + i) / len;
                let end = ((row + 1) * len - at).min(l);
                let v = fold_vectorized(&vals[i..end], id, f);
                match parts.last_mut() {
                    Some((r, acc)) if *r == row => *acc = f(*acc, v),
                    _ => parts.push((row, v)),
                }
                i = end;
            }
            at += l;
        }
        Ok(parts)
    };
    let parts: Vec<Vec<(usize, f64)>> = if total >= PAR_MIN {
        tasks.par_iter().map(run).collect::<Result<_>>()?
    } else {
        tasks.iter().map(run).collect::<Result<_>>()?
    };
    let mut acc = vec![id; rows];
    for (r, v) in parts.into_iter().flatten() {
        acc[r] = f(acc[r], v);
    }
    Ok(acc.into_iter().map(|a| a as f32).collect())
}

/// Runs the program over `n` elements in tasks of [`TASK`] (on threads from [`PAR_MIN`]
/// elements) and chunks of [`CHUNK`], each task with its own scratch: `outs` holds each
/// task's slice of the output, `extras` its slices of the extra outputs.
fn drive(n: usize, cx: &Ctx<'_>, outs: Vec<Dst<'_>>, extras: Vec<Vec<Dst<'_>>>) -> Result<()> {
    // `zip` below stops at the shorter side: a task without its extras would leave them unwritten.
    if outs.len() != n.div_ceil(TASK) || extras.len() != outs.len() {
        return Err(Error::Internal(format!("fused: {} and {} tasks for {n} elements", outs.len(), extras.len())));
    }
    let run = |(t, (mut o, mut ex)): (usize, (Dst<'_>, Vec<Dst<'_>>))| -> Result<()> {
        let mut scratch = cx.scratch(CHUNK);
        let task_len = o.len();
        for at in (0..task_len).step_by(CHUNK) {
            let len = CHUNK.min(task_len - at);
            let mut parts: Vec<Dst<'_>> = ex.iter_mut().map(|d| d.sub(at, len)).collect();
            cx.chunk(t * TASK + at, len, &mut scratch, o.sub(at, len), &mut parts)?;
        }
        Ok(())
    };
    if n >= PAR_MIN {
        outs.into_par_iter().zip(extras).enumerate().try_for_each(run)
    } else {
        outs.into_iter().zip(extras).enumerate().try_for_each(run)
    }
}

/// Where a step's value lives during a chunk.
#[derive(Clone, Copy, PartialEq)]
enum Home {
    /// A full-size contiguous input, read in place.
    Input(usize),
    /// A one-element input: its one value stands for every element.
    InputScalar(usize),
    /// One element in the step's scratch (constants, and steps over scalars only).
    Scalar,
    /// A chunk in the step's scratch.
    Chunk,
    /// Written straight into the output chunk (the result, when nothing reads it after).
    Output,
    /// Written straight into the chunk of [`Program::extra_outputs`]' `k`th, and read
    /// from there.
    Extra(usize),
}

/// One value of a chunk: `len` elements of `data` from `off`, or (`scalar`) the one at
/// `off` standing for all of them.
struct View<'a> {
    data: Src<'a>,
    off: usize,
    len: usize,
    scalar: bool,
}

impl<'a> View<'a> {
    /// Elements `off..off + n` of `v`, this view's data typed; an internal error, not a
    /// panic, where they are not there (an empty value: [`Ctx::view`]).
    #[inline]
    fn part<'v, T>(&self, v: &'v [T], n: usize) -> Result<&'v [T]> {
        let end = self.off + n;
        v.get(self.off..end)
            .ok_or_else(|| Error::Internal(format!("fused: elements {}..{end} of {} read", self.off, v.len())))
    }

    /// The view's elements (one, if `scalar`) as `T`.
    #[inline]
    fn slice<T: SrcElem>(&self) -> Result<&'a [T]> {
        let v = T::unwrap_src(self.data)
            .ok_or_else(|| Error::Internal(format!("fused: a {} value read as {}", self.data.dtype(), T::DTYPE)))?;
        self.part(v, if self.scalar { 1 } else { self.len })
    }

    /// The view as a kernel operand: its scalar, or its slice.
    #[inline]
    fn operand<T: SrcElem>(&self) -> Result<Operand<'a, T>> {
        let s = self.slice()?;
        Ok(if self.scalar { Operand::Scalar(s[0]) } else { Operand::Slice(s) })
    }
}

/// A program ready to run chunk by chunk.
struct Ctx<'a> {
    p: &'a Program,
    ins: Vec<&'a CpuData>,
    homes: Vec<Home>,
    /// Broadcast strides of the inputs read by gathering (neither full-size nor scalar).
    strides: Vec<Vec<isize>>,
    /// The scratch buffer each step's value lives in (steps whose home is an input, the
    /// output or an extra output have none, and read nothing from it).
    slots: Vec<usize>,
    /// Each scratch buffer: its dtype, and the constant it holds (`None`: a chunk's room).
    buffers: Vec<(DType, Option<f64>)>,
}

/// Scratch buffers for the steps of `p` living in `homes`: a constant keeps its own; a
/// computed value takes a buffer of its dtype that no live value holds, so a chain needs
/// two or three chunks, not one per step. (One per step cost the 1000-op chain an
/// allocation per op, and a 64-step region over a large array 512 KiB of scratch per
/// task.) A value is live until its last reader; the result and the extra outputs until
/// the chunk ends. A step never writes the buffer one of its operands lives in.
fn assign_slots(p: &Program, homes: &[Home]) -> (Vec<usize>, Vec<(DType, Option<f64>)>) {
    const NONE: usize = usize::MAX;
    let mut last_read = vec![0usize; p.steps.len()];
    for (i, &(step, _)) in p.steps.iter().enumerate() {
        for a in step.args() {
            last_read[a] = i;
        }
    }
    for &v in p.extra_outputs.iter().chain([&p.result]) {
        if let Some(l) = last_read.get_mut(v) {
            *l = NONE;
        }
    }
    let mut slots = vec![NONE; p.steps.len()];
    let mut buffers: Vec<(DType, Option<f64>)> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    for (i, (&(step, dtype), home)) in p.steps.iter().zip(homes).enumerate() {
        slots[i] = match (home, step) {
            (Home::Input(_) | Home::InputScalar(_) | Home::Output | Home::Extra(_), _) => NONE,
            (Home::Scalar, Step::Const(c)) => {
                buffers.push((dtype, Some(c)));
                buffers.len() - 1
            }
            (Home::Scalar | Home::Chunk, _) => match free.iter().position(|&b| buffers[b].0 == dtype) {
                Some(k) => free.swap_remove(k),
                None => {
                    buffers.push((dtype, None));
                    buffers.len() - 1
                }
            },
        };
        // Operands read for the last time free their buffers, after this step took its
        // own: its output never aliases an input.
        let ops = step.args();
        for (k, &a) in ops.iter().enumerate() {
            let first = !ops[..k].contains(&a);
            if first && last_read[a] == i && slots[a] != NONE && buffers[slots[a]].1.is_none() {
                free.push(slots[a]);
            }
        }
    }
    (slots, buffers)
}

impl<'a> Ctx<'a> {
    fn new(p: &'a Program, ins: Vec<&'a CpuData>) -> Result<Self> {
        let out_n = numel(&p.shape);
        let mut homes: Vec<Home> = Vec::with_capacity(p.steps.len());
        for &(step, _) in &p.steps {
            let all_scalar =
                |ops: &[usize]| ops.iter().all(|&a| matches!(homes[a], Home::Scalar | Home::InputScalar(_)));
            let home = match step {
                Step::Input(k) => {
                    let n = numel(&p.inputs[k].shape);
                    if n == 1 {
                        Home::InputScalar(k)
                    } else if n == out_n {
                        Home::Input(k)
                    } else {
                        Home::Chunk
                    }
                }
                Step::Const(_) => Home::Scalar,
                Step::Unary(_, a) | Step::Cast(a) => {
                    if all_scalar(&[a]) {
                        Home::Scalar
                    } else {
                        Home::Chunk
                    }
                }
                Step::Binary(_, a, b) => {
                    if all_scalar(&[a, b]) {
                        Home::Scalar
                    } else {
                        Home::Chunk
                    }
                }
                Step::Select(c, a, b) => {
                    if all_scalar(&[c, a, b]) {
                        Home::Scalar
                    } else {
                        Home::Chunk
                    }
                }
                // The CPU's `accepts` takes no reductions (its limits have no row regions).
                Step::Reduce(..) => return Err(Error::unsupported("cpu", "fused reductions")),
            };
            homes.push(home);
        }
        for (k, &v) in p.extra_outputs.iter().enumerate() {
            // Values over scalars only stay in scratch and are broadcast at the chunk's end.
            if homes.get(v) == Some(&Home::Chunk) {
                homes[v] = Home::Extra(k);
            }
        }
        let read_later = p.steps[p.result + 1..].iter().any(|&(s, _)| s.args().contains(&p.result));
        let computed = !matches!(p.steps.get(p.result), Some((Step::Input(_), _)));
        if homes.get(p.result) == Some(&Home::Chunk) && computed && !read_later {
            homes[p.result] = Home::Output;
        }
        let strides = p.inputs.iter().map(|m| broadcast_strides(&m.shape, &p.shape)).collect();
        let (slots, buffers) = assign_slots(p, &homes);
        Ok(Ctx { p, ins, homes, strides, slots, buffers })
    }

    /// The scratch buffers of [`assign_slots`]: room for chunks of `chunk` elements, no
    /// longer than the region (a 64-step region over 4 elements zeroed 64 chunks of 2048,
    /// then the chunk size, per eval: `memset` was 6.6% of the 1000-op chain's profile),
    /// constants filled.
    fn scratch(&self, chunk: usize) -> Vec<CpuData> {
        let chunk = chunk.min(numel(&self.p.shape));
        self.buffers
            .iter()
            .map(|&(dtype, c)| match c {
                Some(c) => CpuData::filled(dtype, 1, c),
                None => CpuData::filled(dtype, chunk, 0.0),
            })
            .collect()
    }

    /// Output elements `start..start + len` into `out`, and into `extras` (their chunks)
    /// the values of [`Program::extra_outputs`].
    fn chunk(
        &self,
        start: usize,
        len: usize,
        scratch: &mut [CpuData],
        out: Dst<'_>,
        extras: &mut [Dst<'_>],
    ) -> Result<()> {
        // Every extra output's chunk is written (`drive`'s caller relies on it).
        if extras.len() != self.p.extra_outputs.len() {
            return Err(Error::Internal("fused: extra outputs and their room differ".into()));
        }
        let mut out = Some(out);
        for (i, &(step, _)) in self.p.steps.iter().enumerate() {
            match self.homes[i] {
                Home::Input(_) | Home::InputScalar(_) => {}
                Home::Scalar if matches!(step, Step::Const(_)) => {}
                home @ (Home::Scalar | Home::Chunk) => {
                    // Taken out while written (a placeholder costs no allocation): the
                    // operands it reads live in other buffers.
                    let slot = self.slots[i];
                    let mut buf = std::mem::replace(&mut scratch[slot], CpuData::Bool(Vec::new()));
                    let n = if home == Home::Scalar { 1 } else { len };
                    let r = self.step(i, step, dst(&mut buf, n), scratch, extras, start, len);
                    scratch[slot] = buf;
                    r?;
                }
                Home::Output => {
                    let o = out.take().ok_or_else(|| Error::Internal("fused: output written twice".into()))?;
                    self.step(i, step, o, scratch, extras, start, len)?;
                }
                Home::Extra(k) => {
                    // Taken out likewise; the other extra outputs stay readable.
                    let mut e = std::mem::replace(&mut extras[k], Dst::Bool(&mut []));
                    let r = self.step(i, step, e.reborrow(), scratch, extras, start, len);
                    extras[k] = e;
                    r?;
                }
            }
        }
        for (k, &v) in self.p.extra_outputs.iter().enumerate() {
            if self.homes[v] != Home::Extra(k) {
                let mut e = std::mem::replace(&mut extras[k], Dst::Bool(&mut []));
                let r = copy_out(&self.view(v, scratch, extras, start, len), e.reborrow());
                extras[k] = e;
                r?;
            }
        }
        match out {
            // The result lives elsewhere (an input, a scalar, or read by a later step).
            Some(o) => copy_out(&self.view(self.p.result, scratch, extras, start, len), o),
            None => Ok(()),
        }
    }

    /// Step `i` of the chunk at `start` into `target`, its operands read from `scratch`
    /// and `extras`.
    #[allow(clippy::too_many_arguments)]
    fn step(
        &self,
        i: usize,
        step: Step,
        target: Dst<'_>,
        scratch: &[CpuData],
        extras: &[Dst<'_>],
        start: usize,
        len: usize,
    ) -> Result<()> {
        let view = |j: usize| self.view(j, scratch, extras, start, len);
        match step {
            Step::Input(k) => gather(self.ins[k], &self.p.shape, &self.strides[k], start, target)?,
            Step::Const(_) => {}
            Step::Unary(op, a) => {
                let x = view(a);
                if op.is_predicate() {
                    let Dst::Bool(o) = target else { return Err(mismatch(step)) };
                    with_src!(x.data, |v| elementwise::predicate_into(op, x.part(v, o.len())?, o))?;
                } else {
                    with_dst!(target, |o| elementwise::unary_into(op, x.slice()?, o))?;
                }
            }
            Step::Binary(op, a, b) => {
                let (x, y) = (view(a), view(b));
                if op.is_comparison() {
                    let Dst::Bool(o) = target else { return Err(mismatch(step)) };
                    with_src!(x.data, |v| {
                        let xa =
                            if x.scalar { Operand::Scalar(x.part(v, 1)?[0]) } else { Operand::Slice(x.part(v, len)?) };
                        elementwise::compare_into(op, xa, y.operand()?, o)
                    })?;
                } else {
                    with_dst!(target, |o| elementwise::binary_into(op, x.operand()?, y.operand()?, o))?;
                }
            }
            Step::Select(c, a, b) => {
                let (c, x, y) = (view(c), view(a), view(b));
                with_dst!(target, |o| elementwise::select_into(c.operand()?, x.operand()?, y.operand()?, o))?;
            }
            Step::Cast(a) => cast(&view(a), self.p.steps[i].1, target)?,
            Step::Reduce(..) => return Err(Error::unsupported("cpu", "fused reductions")),
        }
        Ok(())
    }

    /// Step `j`'s value for the chunk at `start` (`scratch`: [`Ctx::scratch`]'s buffers;
    /// `extras`: the extra outputs' chunks).
    #[inline]
    fn view<'s>(
        &'s self,
        j: usize,
        scratch: &'s [CpuData],
        extras: &'s [Dst<'_>],
        start: usize,
        len: usize,
    ) -> View<'s> {
        let (data, off, scalar) = match self.homes[j] {
            Home::Input(k) => (Src::of(self.ins[k]), start, false),
            Home::InputScalar(k) => (Src::of(self.ins[k]), 0, true),
            Home::Scalar => (Src::of(&scratch[self.slots[j]]), 0, true),
            Home::Chunk => (Src::of(&scratch[self.slots[j]]), 0, false),
            Home::Extra(k) => (extras[k].src(), 0, false),
            // Written into the output chunk and read by no step (`Ctx::new`): an empty
            // value, which reads as an internal error rather than a panic.
            Home::Output => (Src::Bool(&[]), 0, false),
        };
        View { data, off, len, scalar }
    }
}

fn mismatch(step: Step) -> Error {
    Error::Internal(format!("fused step {step:?}: output of the wrong dtype"))
}

/// Elements `start..` of input `d` broadcast to `shape` along `strides`, into `out`.
fn gather(d: &CpuData, shape: &[usize], strides: &[isize], start: usize, out: Dst<'_>) -> Result<()> {
    with_dst!(out, |o| {
        let src = typed_like(d, o)?;
        match (shape.last(), strides.last()) {
            // A row broadcast (a per-row mean: stride 0) or a column vector read along the
            // rows (stride 1): runs of the last axis, filled or copied, one offset per run
            // (element by element it held var's fused pass to 2.2 GB/s on 2 cores).
            (Some(&inner), Some(&step @ (0 | 1))) if inner >= 8 => {
                let (mut i, mut flat) = (0, start);
                while i < o.len() {
                    let run = (inner - flat % inner).min(o.len() - i);
                    let base = offset(shape, strides, flat);
                    if step == 0 {
                        o[i..i + run].fill(src[base]);
                    } else {
                        o[i..i + run].copy_from_slice(&src[base..base + run]);
                    }
                    i += run;
                    flat += run;
                }
            }
            _ => {
                for (o, i) in o.iter_mut().zip(StridedIter::from_flat(shape, strides, 0, start)) {
                    *o = src[i];
                }
            }
        }
        Ok(())
    })
}

/// The element offset of flat index `flat` of `shape` read with `strides`.
fn offset(shape: &[usize], strides: &[isize], mut flat: usize) -> usize {
    let mut off = 0isize;
    for (&n, &st) in shape.iter().zip(strides).rev() {
        off += (flat % n) as isize * st;
        flat /= n;
    }
    off as usize
}

/// All of `d`, typed like `_like` (the output slice it is copied into).
fn typed_like<'a, T: CpuElem>(d: &'a CpuData, _like: &[T]) -> Result<&'a [T]> {
    T::unwrap(d).ok_or_else(|| Error::Internal(format!("fused: a {} value read as {}", d.dtype(), T::DTYPE)))
}

/// A cast step: the same conversion as the unfused `astype` ([`CpuData::astype`]), on
/// a copy of the chunk (casts are rare in hot regions; a slice form would avoid it).
fn cast(x: &View<'_>, dtype: crate::dtype::DType, out: Dst<'_>) -> Result<()> {
    let n = if x.scalar { 1 } else { x.len };
    let part = with_src!(x.data, |v| x.part(v, n).map(|s| CpuElem::wrap(s.to_vec())))?;
    let c = part.astype(dtype);
    with_dst!(out, |o| {
        let src = typed_like(&c, o)?;
        o.copy_from_slice(src);
        Ok(())
    })
}

/// Copies (or broadcasts a scalar) value into the output chunk.
fn copy_out(v: &View<'_>, out: Dst<'_>) -> Result<()> {
    with_dst!(out, |o| {
        match v.operand()? {
            Operand::Slice(s) => o.copy_from_slice(s),
            Operand::Scalar(x) => o.fill(x),
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::primitive::{BinaryOp, UnaryOp};

    fn program(steps: Vec<(Step, DType)>, result: usize, extra_outputs: Vec<usize>) -> Program {
        let m = Meta::new(vec![8], DType::F32);
        Program {
            shape: vec![8],
            inputs: vec![m.clone(), m.clone()],
            steps,
            result,
            reduction: None,
            reduce_axes: vec![],
            output: m,
            extra_outputs,
        }
    }

    fn homes(p: &Program) -> Vec<Home> {
        Ctx::new(p, vec![]).map(|c| c.homes).unwrap()
    }

    #[test]
    fn a_chain_reuses_two_buffers() {
        // x, y, then 20 alternating x*v / v-y: each value dies at its one reader.
        let f = DType::F32;
        let mut steps = vec![(Step::Input(0), f), (Step::Input(1), f)];
        for k in 0..20 {
            let v = steps.len() - 1;
            let op = if k % 2 == 0 { BinaryOp::Mul } else { BinaryOp::Sub };
            steps.push((Step::Binary(op, v, k % 2), f));
        }
        let p = program(steps, 21, vec![]);
        let (slots, buffers) = assign_slots(&p, &homes(&p));
        assert_eq!(buffers.len(), 2, "{slots:?}");
        // No step writes the buffer its operand lives in.
        for (i, &(s, _)) in p.steps.iter().enumerate() {
            assert!(s.args().iter().all(|&a| slots[a] == usize::MAX || slots[a] != slots[i]), "step {i}");
        }
        assert_eq!(slots[21], usize::MAX, "the result is written into the output");
    }

    #[test]
    fn extra_outputs_are_written_in_place_and_constants_keep_their_buffers() {
        let f = DType::F32;
        let steps = vec![
            (Step::Input(0), f),
            (Step::Const(2.0), f),
            (Step::Binary(BinaryOp::Mul, 0, 1), f), // 2: an extra output
            (Step::Unary(UnaryOp::Exp, 2), f),
            (Step::Unary(UnaryOp::Neg, 1), f), // 4: an extra output over a constant
            (Step::Binary(BinaryOp::Add, 3, 4), f),
            (Step::Binary(BinaryOp::Mul, 5, 2), f),
        ];
        let p = program(steps, 6, vec![2, 4]);
        let h = homes(&p);
        assert!(h[2] == Home::Extra(0) && h[4] == Home::Scalar && h[6] == Home::Output);
        let (slots, buffers) = assign_slots(&p, &h);
        assert_eq!(buffers[slots[1]], (f, Some(2.0)));
        assert_eq!(slots[2], usize::MAX, "the extra output has no scratch");
        // The scalar extra output is broadcast at the chunk's end: its buffer stays its own.
        assert!(slots[3] != slots[4] && slots[5] != slots[4] && slots[3] != slots[1]);
    }

    #[test]
    fn values_of_different_dtypes_never_share() {
        let (f, b) = (DType::F32, DType::Bool);
        let steps = vec![
            (Step::Input(0), f),
            (Step::Unary(UnaryOp::Exp, 0), f),
            (Step::Binary(BinaryOp::Lt, 1, 0), b),
            (Step::Cast(2), f),
            (Step::Binary(BinaryOp::Add, 3, 0), f),
        ];
        let p = program(steps, 4, vec![]);
        let (slots, buffers) = assign_slots(&p, &homes(&p));
        for (i, &(_, dtype)) in p.steps.iter().enumerate() {
            if slots[i] != usize::MAX {
                assert_eq!(buffers[slots[i]].0, dtype, "step {i}");
            }
        }
        // exp's buffer is free again when the cast runs.
        assert_eq!(slots[3], slots[1]);
    }
}
