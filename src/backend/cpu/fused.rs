//! Fused regions on the CPU: one pass over the output in chunks, each value of the
//! program computed chunk by chunk, so no full-size temporary exists between steps.
//!
//! Each step runs the slice kernel its unfused primitive runs ([`elementwise`]'s
//! `*_into` functions), on a chunk, so fused and unfused results are identical (bit for
//! bit) on the CPU. A thread task allocates one scratch buffer per step once and reuses
//! it for every chunk it runs; contiguous inputs are read in place and the result is
//! written straight into the output, so a chunk allocates nothing.
//!
//! A region rooted at a reduction over trailing axes (`sum((x - mean)^2)` of var,
//! `sum(exp(x - max))` of logsumexp) computes its prologue chunk by chunk the same way and
//! folds each chunk's row segments in f64 as the unfused kernels do (`reduce_fast`), so
//! the prologue's values are never written out. The accuracy bound is the unfused sum's;
//! the order of the f64 additions differs, so a result may differ from the unfused one
//! where the f64 sum lies next to an f32 rounding boundary.

use std::mem::MaybeUninit;

use rayon::prelude::*;

use super::elementwise::{self, Operand};
use super::reduce_fast::{fold_vectorized, nan_max, nan_min, with_monoid};
use super::storage::{CpuData, CpuElem, with_data};
use super::{PAR_MIN, data, wrap};
use crate::backend::{Buffer, Input};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::fusion::{Fuser, Limits, Program, Step};
use crate::primitive::{Meta, Primitive, ReduceOp};
use crate::shape::{StridedIter, broadcast_strides, numel};
use crate::stream::Stream;

/// Elements per chunk: 8 KiB of f32 per live value (a 10-step program keeps well inside
/// L2), and enough work per chunk that the per-step dispatch is noise.
const CHUNK: usize = 2048;

/// Chunks per thread task: 32K elements, so a 1M-element region makes 32 tasks (even
/// load on 2 or 16 cores) and the task's scratch allocation is paid once per 16 chunks.
const TASK_CHUNKS: usize = 16;

/// The CPU's fuser.
pub(crate) struct CpuFuser;

impl Fuser for CpuFuser {
    fn limits(&self) -> Limits {
        // No binding limit on the CPU. The step bound: each region costs the host a plan and
        // an interpreter set-up, so longer regions amortise them (the 1000-op chain in 4
        // regions, not 16 at 64 steps: 5% fewer instructions, callgrind, session 18), and
        // scratch is assigned by liveness (`assign_slots`), so a long chain still keeps two
        // chunks. A wide region keeps at most one chunk per live value: 2 MiB of f32 at 256.
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
        // Extra outputs start empty, with room for `n`: each chunk's values are copied into
        // the room on the worker that computes them, and the lengths are set once every
        // task has succeeded. (Zero-filled up front on the calling thread, four extra
        // outputs of 1M f32 took a fifth of `tanh(exp(a*b+c)*0.5)`'s time when the
        // statement still held its temporaries: perf, session 16.)
        let mut extras: Vec<CpuData> =
            program.extra_outputs.iter().map(|&v| CpuData::filled(program.steps[v].1, 0, 0.0)).collect();
        // Each extra output cut into the same tasks as the main one.
        let task = CHUNK * TASK_CHUNKS;
        let mut tasks: Vec<Vec<Spare<'_>>> = (0..n.div_ceil(task)).map(|_| Vec::new()).collect();
        for e in &mut extras {
            for (t, d) in tasks.iter_mut().zip(split_spare(e, n, task)) {
                t.push(d);
            }
        }
        let out = match program.output.dtype {
            DType::Bool => CpuData::Bool(drive(n, |s| Dst::Bool(s), &cx, tasks)?),
            DType::U32 => CpuData::U32(drive(n, |s| Dst::U32(s), &cx, tasks)?),
            DType::I32 => CpuData::I32(drive(n, |s| Dst::I32(s), &cx, tasks)?),
            DType::I64 => CpuData::I64(drive(n, |s| Dst::I64(s), &cx, tasks)?),
            DType::F16 => CpuData::F16(drive(n, |s| Dst::F16(s), &cx, tasks)?),
            DType::BF16 => CpuData::BF16(drive(n, |s| Dst::BF16(s), &cx, tasks)?),
            DType::F32 => CpuData::F32(drive(n, |s| Dst::F32(s), &cx, tasks)?),
            DType::F64 => CpuData::F64(drive(n, |s| Dst::F64(s), &cx, tasks)?),
        };
        for e in &mut extras {
            // SAFETY: `drive` succeeded, so every task ran and each chunk wrote its part of
            // every extra output (`Ctx::chunk`, `write_spare`): the first `n` are
            // initialised (room for them was reserved by `split_spare`).
            unsafe { set_len(e, n) };
        }
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
    let block = CHUNK * TASK_CHUNKS;
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
        let mut scratch = cx.scratch();
        let mut vals = vec![0f32; CHUNK];
        let mut parts: Vec<(usize, f64)> = Vec::new();
        let mut at = a;
        while at < b {
            let l = CHUNK.min(b - at);
            cx.chunk(at, l, &mut scratch, Dst::F32(&mut vals[..l]), &mut Vec::new())?;
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

/// Runs the program into a new output of `n` elements, in tasks of [`TASK_CHUNKS`]
/// chunks (on threads from [`PAR_MIN`] elements), each with its own scratch; `extras`
/// holds each task's slices of the extra outputs.
fn drive<T: CpuElem + Send + Copy + Default>(
    n: usize,
    wrap: for<'a> fn(&'a mut [T]) -> Dst<'a>,
    cx: &Ctx<'_>,
    extras: Vec<Vec<Spare<'_>>>,
) -> Result<Vec<T>> {
    let task = CHUNK * TASK_CHUNKS;
    // Every task must run for `set_len` below to be sound: `zip` stops at the shorter side.
    if extras.len() != n.div_ceil(task) {
        return Err(Error::Internal(format!("fused: {} extra-output tasks for {} elements", extras.len(), n)));
    }
    let mut out: Vec<T> = super::pool::vec(n);
    let run = |(t, (o, mut ex)): (usize, (&mut [MaybeUninit<T>], Vec<Spare<'_>>))| -> Result<()> {
        let mut scratch = cx.scratch();
        for (c, oc) in o.chunks_mut(CHUNK).enumerate() {
            // Initialised here, chunk by chunk on the thread that computes it, rather than
            // all at once on the calling thread: zeroing the whole output there took 15-19%
            // of the 2-core `tanh(exp(a*b+c)*0.5)` (perf, session 15).
            oc.fill(MaybeUninit::new(T::default()));
            // SAFETY: every element of `oc` was just initialised, and `MaybeUninit<T>` has
            // `T`'s layout.
            let oc = unsafe { &mut *(oc as *mut [MaybeUninit<T>] as *mut [T]) };
            let len = oc.len();
            let mut parts: Vec<Spare<'_>> = ex.iter_mut().map(|d| sub_spare(d, c * CHUNK, len)).collect();
            cx.chunk(t * task + c * CHUNK, len, &mut scratch, wrap(oc), &mut parts)?;
        }
        Ok(())
    };
    let spare = &mut out.spare_capacity_mut()[..n];
    if n >= PAR_MIN {
        spare.par_chunks_mut(task).zip(extras).enumerate().try_for_each(run)?;
    } else {
        spare.chunks_mut(task).zip(extras).enumerate().try_for_each(run)?;
    }
    // SAFETY: every task succeeded, and each initialised all of its chunks: the first `n`
    // elements are initialised.
    unsafe { out.set_len(n) };
    Ok(out)
}

/// Room for `n` elements at the end of an empty `d`, cut into slices of `size`.
fn split_spare(d: &mut CpuData, n: usize, size: usize) -> Vec<Spare<'_>> {
    fn cut<T: CpuElem>(v: &mut Vec<T>, n: usize, size: usize) -> std::slice::ChunksMut<'_, MaybeUninit<T>> {
        if v.capacity() < n {
            *v = super::pool::vec(n);
        }
        v.reserve_exact(n);
        v.spare_capacity_mut()[..n].chunks_mut(size)
    }
    match d {
        CpuData::Bool(v) => cut(v, n, size).map(Spare::Bool).collect(),
        CpuData::U32(v) => cut(v, n, size).map(Spare::U32).collect(),
        CpuData::I32(v) => cut(v, n, size).map(Spare::I32).collect(),
        CpuData::I64(v) => cut(v, n, size).map(Spare::I64).collect(),
        CpuData::F16(v) => cut(v, n, size).map(Spare::F16).collect(),
        CpuData::BF16(v) => cut(v, n, size).map(Spare::BF16).collect(),
        CpuData::F32(v) => cut(v, n, size).map(Spare::F32).collect(),
        CpuData::F64(v) => cut(v, n, size).map(Spare::F64).collect(),
    }
}

/// Sets the length of `d`'s vector.
///
/// # Safety
/// The first `n` elements must be initialised, within its capacity.
unsafe fn set_len(d: &mut CpuData, n: usize) {
    // SAFETY: the caller's promise, for whichever vector `d` holds.
    unsafe {
        match d {
            CpuData::Bool(v) => v.set_len(n),
            CpuData::U32(v) => v.set_len(n),
            CpuData::I32(v) => v.set_len(n),
            CpuData::I64(v) => v.set_len(n),
            CpuData::F16(v) => v.set_len(n),
            CpuData::BF16(v) => v.set_len(n),
            CpuData::F32(v) => v.set_len(n),
            CpuData::F64(v) => v.set_len(n),
        }
    }
}

/// Elements `from..from + len` of `d`.
fn sub_spare<'b>(d: &'b mut Spare<'_>, from: usize, len: usize) -> Spare<'b> {
    match d {
        Spare::Bool(v) => Spare::Bool(&mut v[from..from + len]),
        Spare::U32(v) => Spare::U32(&mut v[from..from + len]),
        Spare::I32(v) => Spare::I32(&mut v[from..from + len]),
        Spare::I64(v) => Spare::I64(&mut v[from..from + len]),
        Spare::F16(v) => Spare::F16(&mut v[from..from + len]),
        Spare::BF16(v) => Spare::BF16(&mut v[from..from + len]),
        Spare::F32(v) => Spare::F32(&mut v[from..from + len]),
        Spare::F64(v) => Spare::F64(&mut v[from..from + len]),
    }
}

/// Uninitialised room of an extra output: a task's or a chunk's share.
#[allow(missing_docs)]
enum Spare<'a> {
    Bool(&'a mut [MaybeUninit<bool>]),
    U32(&'a mut [MaybeUninit<u32>]),
    I32(&'a mut [MaybeUninit<i32>]),
    I64(&'a mut [MaybeUninit<i64>]),
    F16(&'a mut [MaybeUninit<half::f16>]),
    BF16(&'a mut [MaybeUninit<half::bf16>]),
    F32(&'a mut [MaybeUninit<f32>]),
    F64(&'a mut [MaybeUninit<f64>]),
}

/// Writes (initialises) every element of `out` with `v`'s values, or its scalar.
fn write_spare(v: &View<'_>, out: Spare<'_>) -> Result<()> {
    fn put<T: CpuElem>(v: &View<'_>, o: &mut [MaybeUninit<T>]) -> Result<()> {
        match v.operand::<T>()? {
            Operand::Slice(s) if s.len() == o.len() => {
                for (d, &x) in o.iter_mut().zip(s) {
                    d.write(x);
                }
            }
            Operand::Slice(s) => return Err(Error::Internal(format!("fused: {} values for {}", s.len(), o.len()))),
            Operand::Scalar(x) => o.fill(MaybeUninit::new(x)),
        }
        Ok(())
    }
    match out {
        Spare::Bool(o) => put(v, o),
        Spare::U32(o) => put(v, o),
        Spare::I32(o) => put(v, o),
        Spare::I64(o) => put(v, o),
        Spare::F16(o) => put(v, o),
        Spare::BF16(o) => put(v, o),
        Spare::F32(o) => put(v, o),
        Spare::F64(o) => put(v, o),
    }
}

/// A step's output slice: a scratch buffer's first elements or a chunk of the output.
#[allow(missing_docs)]
enum Dst<'a> {
    Bool(&'a mut [bool]),
    U32(&'a mut [u32]),
    I32(&'a mut [i32]),
    I64(&'a mut [i64]),
    F16(&'a mut [half::f16]),
    BF16(&'a mut [half::bf16]),
    F32(&'a mut [f32]),
    F64(&'a mut [f64]),
}

/// Runs `$body` with `$o` bound to the typed slice of a [`Dst`].
macro_rules! with_dst {
    ($dst:expr, |$o:ident| $body:expr) => {
        match $dst {
            Dst::Bool($o) => $body,
            Dst::U32($o) => $body,
            Dst::I32($o) => $body,
            Dst::I64($o) => $body,
            Dst::F16($o) => $body,
            Dst::BF16($o) => $body,
            Dst::F32($o) => $body,
            Dst::F64($o) => $body,
        }
    };
}

/// The first `len` elements of a scratch buffer, as a step's output.
fn dst(d: &mut CpuData, len: usize) -> Dst<'_> {
    match d {
        CpuData::Bool(v) => Dst::Bool(&mut v[..len]),
        CpuData::U32(v) => Dst::U32(&mut v[..len]),
        CpuData::I32(v) => Dst::I32(&mut v[..len]),
        CpuData::I64(v) => Dst::I64(&mut v[..len]),
        CpuData::F16(v) => Dst::F16(&mut v[..len]),
        CpuData::BF16(v) => Dst::BF16(&mut v[..len]),
        CpuData::F32(v) => Dst::F32(&mut v[..len]),
        CpuData::F64(v) => Dst::F64(&mut v[..len]),
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
}

/// One value of a chunk: `len` elements of `data` from `off`, or (`scalar`) the one at
/// `off` standing for all of them.
struct View<'a> {
    data: &'a CpuData,
    off: usize,
    len: usize,
    scalar: bool,
}

impl<'a> View<'a> {
    fn slice<T: CpuElem>(&self) -> Result<&'a [T]> {
        let v = T::unwrap(self.data)
            .ok_or_else(|| Error::Internal(format!("fused: a {} value read as {}", self.data.dtype(), T::DTYPE)))?;
        Ok(&v[self.off..self.off + if self.scalar { 1 } else { self.len }])
    }

    fn operand<T: CpuElem>(&self) -> Result<Operand<'a, T>> {
        let s = self.slice()?;
        Ok(if self.scalar { Operand::Scalar(s[0]) } else { Operand::Slice(s) })
    }
}

/// What a value living in the output chunk reads as (see [`Ctx::view`]).
static NO_VALUE: CpuData = CpuData::Bool(Vec::new());

/// A program ready to run chunk by chunk.
struct Ctx<'a> {
    p: &'a Program,
    ins: Vec<&'a CpuData>,
    homes: Vec<Home>,
    /// Broadcast strides of the inputs read by gathering (neither full-size nor scalar).
    strides: Vec<Vec<isize>>,
    /// The scratch buffer each step's value lives in (steps whose home is an input or the
    /// output have none, and read nothing from it).
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
            (Home::Input(_) | Home::InputScalar(_) | Home::Output, _) => NONE,
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
        let read_later = p.steps[p.result + 1..].iter().any(|&(s, _)| s.args().contains(&p.result));
        let computed = !matches!(p.steps.get(p.result), Some((Step::Input(_), _)));
        if homes.get(p.result) == Some(&Home::Chunk) && computed && !read_later {
            homes[p.result] = Home::Output;
        }
        let strides = p.inputs.iter().map(|m| broadcast_strides(&m.shape, &p.shape)).collect();
        let (slots, buffers) = assign_slots(p, &homes);
        Ok(Ctx { p, ins, homes, strides, slots, buffers })
    }

    /// The scratch buffers of [`assign_slots`]: a chunk's room no longer than the region
    /// (a 64-step region over 4 elements zeroed 64 chunks of 2048 per eval: `memset` was
    /// 6.6% of the 1000-op chain's profile), constants filled.
    fn scratch(&self) -> Vec<CpuData> {
        let chunk = CHUNK.min(numel(&self.p.shape));
        self.buffers
            .iter()
            .map(|&(dtype, c)| match c {
                Some(c) => CpuData::filled(dtype, 1, c),
                None => CpuData::filled(dtype, chunk, 0.0),
            })
            .collect()
    }

    /// Output elements `start..start + len` into `out`, and into `extras` the values of
    /// [`Program::extra_outputs`].
    fn chunk(
        &self,
        start: usize,
        len: usize,
        scratch: &mut [CpuData],
        out: Dst<'_>,
        extras: &mut Vec<Spare<'_>>,
    ) -> Result<()> {
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
                    let r = self.step(i, step, dst(&mut buf, n), scratch, start, len);
                    scratch[slot] = buf;
                    r?;
                }
                Home::Output => {
                    let o = out.take().ok_or_else(|| Error::Internal("fused: output written twice".into()))?;
                    self.step(i, step, o, scratch, start, len)?;
                }
            }
        }
        // Every extra output's room for the chunk is written (`drive`'s caller relies on it).
        if extras.len() != self.p.extra_outputs.len() {
            return Err(Error::Internal("fused: extra outputs and their room differ".into()));
        }
        for (&v, d) in self.p.extra_outputs.iter().zip(extras.drain(..)) {
            write_spare(&self.view(v, scratch, start, len), d)?;
        }
        match out {
            // The result lives elsewhere (an input, a scalar, or read by a later step).
            Some(o) => copy_out(&self.view(self.p.result, scratch, start, len), o),
            None => Ok(()),
        }
    }

    /// Step `i` of the chunk at `start` into `target`, its operands read from `scratch`.
    fn step(&self, i: usize, step: Step, target: Dst<'_>, scratch: &[CpuData], start: usize, len: usize) -> Result<()> {
        let view = |j: usize| self.view(j, scratch, start, len);
        match step {
            Step::Input(k) => gather(self.ins[k], &self.p.shape, &self.strides[k], start, target)?,
            Step::Const(_) => {}
            Step::Unary(op, a) => {
                let x = view(a);
                if op.is_predicate() {
                    let Dst::Bool(o) = target else { return Err(mismatch(step)) };
                    with_data!(x.data, |v| elementwise::predicate_into(op, &v[x.off..x.off + o.len()], o))?;
                } else {
                    with_dst!(target, |o| elementwise::unary_into(op, x.slice()?, o))?;
                }
            }
            Step::Binary(op, a, b) => {
                let (x, y) = (view(a), view(b));
                if op.is_comparison() {
                    let Dst::Bool(o) = target else { return Err(mismatch(step)) };
                    with_data!(x.data, |v| {
                        let xa =
                            if x.scalar { Operand::Scalar(v[x.off]) } else { Operand::Slice(&v[x.off..x.off + len]) };
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

    /// Step `j`'s value for the chunk at `start` (`scratch`: [`Ctx::scratch`]'s buffers).
    fn view<'s>(&'s self, j: usize, scratch: &'s [CpuData], start: usize, len: usize) -> View<'s> {
        match self.homes[j] {
            Home::Input(k) => View { data: self.ins[k], off: start, len, scalar: false },
            Home::InputScalar(k) => View { data: self.ins[k], off: 0, len, scalar: true },
            Home::Scalar => View { data: &scratch[self.slots[j]], off: 0, len, scalar: true },
            Home::Chunk => View { data: &scratch[self.slots[j]], off: 0, len, scalar: false },
            // Written into the output chunk and read by no step (`Ctx::new`): an empty
            // value, which reads as an internal error rather than a panic.
            Home::Output => View { data: &NO_VALUE, off: 0, len, scalar: false },
        }
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
    let part = with_data!(x.data, |v| CpuElem::wrap(v[x.off..x.off + n].to_vec()));
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
    fn extra_outputs_and_constants_keep_their_buffers() {
        let f = DType::F32;
        let steps = vec![
            (Step::Input(0), f),
            (Step::Const(2.0), f),
            (Step::Binary(BinaryOp::Mul, 0, 1), f), // 2: an extra output
            (Step::Unary(UnaryOp::Exp, 2), f),
            (Step::Unary(UnaryOp::Neg, 3), f),
            (Step::Binary(BinaryOp::Add, 4, 1), f),
        ];
        let p = program(steps, 5, vec![2]);
        let (slots, buffers) = assign_slots(&p, &homes(&p));
        assert_eq!(buffers[slots[1]], (f, Some(2.0)));
        for j in 3..5 {
            assert_ne!(slots[j], slots[2], "step {j} took the extra output's buffer");
            assert_ne!(slots[j], slots[1], "step {j} took the constant's buffer");
        }
        assert_ne!(slots[4], slots[3]);
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
