//! Reductions, arg-reductions and scans.
//!
//! Floats over one consecutive run of axes (the common case: last, first or middle axes)
//! take `reduce_fast`, which reads the input in place. Everything else (integers, bool,
//! axes such as `[0, 2]`) takes the general path here: the input is first read in an
//! order where the reduced (or scanned) axes are innermost, so the work is a loop over
//! contiguous chunks. Both paths compute the same values. Floats accumulate in f64 and
//! integers in wrapping i64: the CPU is the reference the GPU is checked against, so it
//! favours accuracy over speed. Chunk sums run on threads in a fixed split, so results do
//! not depend on the thread count.

use std::borrow::Cow;

use rayon::prelude::*;

use super::storage::{CpuData, CpuElem};
use super::{PAR_MIN, reduce_fast, unsupported};

use crate::error::Result;
use crate::primitive::{ArgReduceOp, ReduceOp, ScanOp};
use crate::shape::{StridedIter, contiguous_strides, numel};

/// The input read with `inner` axes moved to the end (kept order otherwise): returns the
/// data in that order and the permuted shape.
fn move_axes_last<'a, T: Copy>(v: &'a [T], shape: &[usize], inner: &[usize]) -> (Cow<'a, [T]>, Vec<usize>) {
    let strides = contiguous_strides(shape);
    let mut perm: Vec<usize> = (0..shape.len()).filter(|a| !inner.contains(a)).collect();
    perm.extend_from_slice(inner);
    let pshape: Vec<usize> = perm.iter().map(|&a| shape[a]).collect();
    if perm.iter().enumerate().all(|(i, &a)| i == a) {
        return (Cow::Borrowed(v), pshape);
    }
    let pstrides: Vec<isize> = perm.iter().map(|&a| strides[a]).collect();
    (Cow::Owned(StridedIter::new(&pshape, &pstrides, 0).map(|i| v[i]).collect()), pshape)
}

/// `shape` seen as `[outer, len, inner]` around `axes` when they are one consecutive run
/// (`[1]`, `[0, 1]`, `[2, 3]`); `None` for a gap such as `[0, 2]` or no axes at all.
fn around(shape: &[usize], axes: &[usize]) -> Option<(usize, usize, usize)> {
    let mut a = axes.to_vec();
    a.sort_unstable();
    a.dedup();
    let (&first, &last) = (a.first()?, a.last()?);
    (last - first + 1 == a.len())
        .then(|| (numel(&shape[..first]), numel(&shape[first..=last]), numel(&shape[last + 1..])))
}

/// Runs `$e` with `$v` bound to the typed data when `$x` holds floats (the fast paths
/// take those); `None` for integers and bool.
macro_rules! on_floats {
    ($x:expr, $v:ident => $e:expr) => {
        match $x {
            CpuData::F16($v) => Some($e),
            CpuData::BF16($v) => Some($e),
            CpuData::F32($v) => Some($e),
            CpuData::F64($v) => Some($e),
            CpuData::Bool(_) | CpuData::U32(_) | CpuData::I32(_) | CpuData::I64(_) => None,
        }
    };
}

/// `f` over consecutive chunks of `len` elements, in parallel when there is enough work.
fn per_chunk<T: Sync, U: Send>(v: &[T], len: usize, f: impl Fn(&[T]) -> U + Sync + Send) -> Vec<U> {
    if v.len() >= PAR_MIN && v.len() / len >= 2 {
        v.par_chunks(len).map(f).collect()
    } else {
        v.chunks(len).map(f).collect()
    }
}

/// Folds one chunk; for a long chunk, folds fixed-size blocks on threads, then the
/// block results in order.
fn fold<T: Copy + Send + Sync>(c: &[T], id: T, f: impl Fn(T, T) -> T + Sync + Send + Copy) -> T {
    const BLOCK: usize = 1 << 14;
    if c.len() >= PAR_MIN {
        let parts: Vec<T> = c.par_chunks(BLOCK).map(|b| b.iter().fold(id, |a, &x| f(a, x))).collect();
        parts.into_iter().fold(id, f)
    } else {
        c.iter().fold(id, |a, &x| f(a, x))
    }
}

fn reduce_f64(op: ReduceOp, c: &[f64]) -> f64 {
    match op {
        ReduceOp::Sum => fold(c, 0.0, |a, b| a + b),
        ReduceOp::Prod => fold(c, 1.0, |a, b| a * b),
        // NaN wins, as in NumPy.
        ReduceOp::Max => fold(c, f64::NEG_INFINITY, |a, b| if a.is_nan() || a > b { a } else { b }),
        ReduceOp::Min => fold(c, f64::INFINITY, |a, b| if a.is_nan() || a < b { a } else { b }),
    }
}

fn reduce_i64(op: ReduceOp, c: &[i64]) -> i64 {
    match op {
        ReduceOp::Sum => fold(c, 0, i64::wrapping_add),
        ReduceOp::Prod => fold(c, 1, i64::wrapping_mul),
        ReduceOp::Max => fold(c, i64::MIN, i64::max),
        ReduceOp::Min => fold(c, i64::MAX, i64::min),
    }
}

/// Data in the type its dtype accumulates in: f64 for floats, wrapping i64 for integers
/// and bool (exact for every integer dtype, i64 included).
enum Wide {
    F64(Vec<f64>),
    I64(Vec<i64>),
}

fn widen(x: &CpuData) -> Wide {
    fn f<T: CpuElem>(v: &[T]) -> Vec<f64> {
        v.iter().map(|x| x.to_f64()).collect()
    }
    match x {
        CpuData::Bool(v) => Wide::I64(v.iter().map(|&b| b as i64).collect()),
        CpuData::U32(v) => Wide::I64(v.iter().map(|&b| b as i64).collect()),
        CpuData::I32(v) => Wide::I64(v.iter().map(|&b| b as i64).collect()),
        CpuData::I64(v) => Wide::I64(v.clone()),
        CpuData::F16(v) => Wide::F64(f(v)),
        CpuData::BF16(v) => Wide::F64(f(v)),
        CpuData::F32(v) => Wide::F64(f(v)),
        CpuData::F64(v) => Wide::F64(v.clone()),
    }
}

pub(super) fn reduce(op: ReduceOp, x: &CpuData, shape: &[usize], axes: &[usize]) -> Result<CpuData> {
    let dtype = x.dtype();
    let len = numel(&axes.iter().map(|&a| shape[a]).collect::<Vec<_>>());
    let outer = numel(shape) / len.max(1);
    if len == 0 && matches!(op, ReduceOp::Max | ReduceOp::Min) {
        return Err(unsupported("max/min over an empty axis", dtype));
    }
    if let Some((outer, len, inner)) = around(shape, axes)
        && len > 0
        && let Some(r) = on_floats!(x, v => reduce_fast::reduce(op, v, outer, len, inner))
    {
        return Ok(CpuData::F64(r).astype(dtype));
    }
    let r = match &widen(x) {
        Wide::F64(_) if len == 0 => CpuData::F64(vec![reduce_f64(op, &[]); outer]),
        Wide::I64(_) if len == 0 => CpuData::I64(vec![reduce_i64(op, &[]); outer]),
        Wide::F64(v) => {
            let (d, _) = move_axes_last(v, shape, axes);
            CpuData::F64(per_chunk(&d, len, |c| reduce_f64(op, c)))
        }
        Wide::I64(v) => {
            let (d, _) = move_axes_last(v, shape, axes);
            CpuData::I64(per_chunk(&d, len, |c| reduce_i64(op, c)))
        }
    };
    Ok(r.astype(dtype))
}

/// First index of the extremum; a NaN counts as the extremum.
fn arg_best<T: PartialOrd + Copy>(c: &[T], max: bool) -> u32 {
    let mut best = 0;
    for (i, x) in c.iter().enumerate() {
        #[allow(clippy::eq_op)]
        let nan = x != x;
        if nan {
            return i as u32;
        }
        if (max && *x > c[best]) || (!max && *x < c[best]) {
            best = i;
        }
    }
    best as u32
}

pub(super) fn arg_reduce(op: ArgReduceOp, x: &CpuData, shape: &[usize], axis: usize) -> CpuData {
    let max = op == ArgReduceOp::ArgMax;
    let len = shape[axis].max(1);
    if let Some((outer, len, inner)) = around(shape, &[axis])
        && len > 0
        && let Some(r) = on_floats!(x, v => reduce_fast::arg_reduce(max, v, outer, len, inner))
    {
        return CpuData::U32(r);
    }
    fn go<T: CpuElem>(v: &[T], shape: &[usize], axis: usize, len: usize, max: bool) -> Vec<u32> {
        let (d, _) = move_axes_last(v, shape, &[axis]);
        per_chunk(&d, len, |c| arg_best(c, max))
    }
    CpuData::U32(match widen(x) {
        Wide::F64(v) => go(&v, shape, axis, len, max),
        Wide::I64(v) => go(&v, shape, axis, len, max),
    })
}

fn scan_chunk<T: Copy>(c: &[T], reverse: bool, f: impl Fn(T, T) -> T) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(c.len());
    let mut it: Box<dyn Iterator<Item = &T>> = if reverse { Box::new(c.iter().rev()) } else { Box::new(c.iter()) };
    if let Some(&first) = it.next() {
        let mut acc = first;
        out.push(acc);
        for &x in it {
            acc = f(acc, x);
            out.push(acc);
        }
    }
    if reverse {
        out.reverse();
    }
    out
}

pub(super) fn scan(op: ScanOp, x: &CpuData, shape: &[usize], axis: usize, reverse: bool) -> Result<CpuData> {
    let dtype = x.dtype();
    let len = shape[axis].max(1);
    if let Some((outer, len, inner)) = around(shape, &[axis])
        && len > 0
        && let Some(r) = on_floats!(x, v => CpuElem::wrap(reduce_fast::scan(op, v, outer, len, inner, reverse)))
    {
        return Ok(r);
    }
    // Undo `move_axes_last`: read the scanned buffer back in the original layout.
    let restore = |pshape: &[usize]| -> Vec<usize> {
        let ps = contiguous_strides(pshape);
        let mut strides = vec![0isize; shape.len()];
        let mut k = 0;
        for (a, s) in strides.iter_mut().enumerate() {
            if a != axis {
                *s = ps[k];
                k += 1;
            }
        }
        strides[axis] = ps[shape.len() - 1];
        StridedIter::new(shape, &strides, 0).collect()
    };
    fn run<T: Copy + Send + Sync>(d: &[T], len: usize, reverse: bool, f: fn(T, T) -> T) -> Vec<T> {
        per_chunk(d, len, |c| scan_chunk(c, reverse, f)).concat()
    }
    let r = match &widen(x) {
        Wide::F64(v) => {
            let (d, pshape) = move_axes_last(v, shape, &[axis]);
            let f: fn(f64, f64) -> f64 = match op {
                ScanOp::Sum => |a, b| a + b,
                ScanOp::Prod => |a, b| a * b,
                ScanOp::Max => |a, b| if a.is_nan() || a > b { a } else { b },
                ScanOp::Min => |a, b| if a.is_nan() || a < b { a } else { b },
            };
            let s = run(&d, len, reverse, f);
            CpuData::F64(restore(&pshape).into_iter().map(|i| s[i]).collect())
        }
        Wide::I64(v) => {
            let (d, pshape) = move_axes_last(v, shape, &[axis]);
            let f: fn(i64, i64) -> i64 = match op {
                ScanOp::Sum => i64::wrapping_add,
                ScanOp::Prod => i64::wrapping_mul,
                ScanOp::Max => i64::max,
                ScanOp::Min => i64::min,
            };
            let s = run(&d, len, reverse, f);
            CpuData::I64(restore(&pshape).into_iter().map(|i| s[i]).collect())
        }
    };
    Ok(r.astype(dtype))
}
