//! Reductions (over any set of axes), arg-reductions and scans (along one axis).
//!
//! Runs of adjacent reduced axes are merged into one; separate runs are reduced one
//! after another, from the last. A run is `[outer, len, inner]`: contiguous long rows
//! (inner 1) get a workgroup each (tree reduction), everything else one thread per
//! output walking `len` (neighbouring threads read neighbouring columns).

use super::buffer::{GpuBuffer, alloc};
use super::context::context;
use super::encoder::{dispatch, dispatch_1d, grid};
use super::params::ReduceParams;
use super::pipeline::pipeline;
use super::shader::Kernel;
use super::u32_param;
use crate::error::Result;
use crate::primitive::{ArgReduceOp, ReduceOp, ScanOp};
use crate::shape::numel;
use crate::shape::split_axis;
use crate::stream::Stream;

/// Rows at least this long get a workgroup each.
const WG_ROW_MIN: usize = 256;
/// Longest stretch of a row one workgroup reduces (64 elements per thread).
const SEGMENT: usize = 256 * 64;

/// Parameters of the kernels that walk `n` lines of `len` elements, `inner` apart.
fn lines(op: &str, n: usize, len: usize, inner: usize) -> Result<ReduceParams> {
    Ok(ReduceParams {
        n: u32_param(op, n)?,
        len: u32_param(op, len)?,
        inner: u32_param(op, inner)?,
        ..Default::default()
    })
}

pub(crate) fn reduce(s: &Stream, op: ReduceOp, x: &GpuBuffer, shape: &[usize], axes: &[usize]) -> Result<GpuBuffer> {
    let ctx = context()?;
    // Runs of adjacent axes, as (first, last).
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &a in axes {
        match runs.last_mut() {
            Some(r) if r.1 + 1 == a => r.1 = a,
            Some(_) | None => runs.push((a, a)),
        }
    }
    if runs.is_empty() {
        // Nothing to reduce: a plain copy.
        let out = alloc(s, x.dtype, numel(shape))?;
        super::encoder::copy(x, &out, out.bytes)?;
        return Ok(out);
    }
    let mut cur_shape = shape.to_vec();
    let mut cur: Option<GpuBuffer> = None;
    let code = op.code();
    for &(first, last) in runs.iter().rev() {
        let outer = numel(&cur_shape[..first]);
        let len = numel(&cur_shape[first..=last]);
        let inner = numel(&cur_shape[last + 1..]);
        let n_out = outer * inner;
        let src = cur.as_ref().unwrap_or(x);
        let out = alloc(s, x.dtype, n_out)?;
        if inner == 1 && len >= WG_ROW_MIN {
            let p = pipeline(ctx, Kernel::Reduce, x.dtype, "reduce_rows", &[("ROP", code)])?;
            let segs = len.div_ceil(SEGMENT);
            let parts = if segs > 1 { alloc(s, x.dtype, n_out * segs)? } else { alloc(s, x.dtype, 0)? };
            let target = if segs > 1 { &parts } else { &out };
            let w = ReduceParams {
                n: u32_param("reduce", n_out * segs)?,
                len: u32_param("reduce", len)?,
                segment: u32_param("reduce", SEGMENT)?,
                segments: u32_param("reduce", segs)?,
                ..Default::default()
            };
            // One workgroup per segment: the grid counts workgroups, not threads.
            let g = grid(ctx, n_out * segs * 256)?;
            dispatch(ctx, &p, &w, &[(1, src), (3, target)], g)?;
            if segs > 1 {
                // Partial results of each row, reduced in a second pass.
                let r = reduce(s, op, &parts, &[n_out, segs], &[1])?;
                super::encoder::copy(&r, &out, out.bytes)?;
            }
        } else {
            let p = pipeline(ctx, Kernel::Reduce, x.dtype, "reduce_lines", &[("ROP", code)])?;
            let w = lines("reduce", n_out, len, inner)?;
            dispatch_1d(ctx, &p, &w, &[(1, src), (3, &out)], n_out)?;
        }
        for d in &mut cur_shape[first..=last] {
            *d = 1;
        }
        cur = Some(out);
    }
    Ok(cur.expect("at least one run"))
}

pub(crate) fn arg_reduce(
    s: &Stream,
    op: ArgReduceOp,
    x: &GpuBuffer,
    shape: &[usize],
    axis: usize,
) -> Result<GpuBuffer> {
    let ctx = context()?;
    let (outer, len, inner) = split_axis(shape, axis);
    let n_out = outer * inner;
    if len == 0 {
        return Err(crate::error::Error::Internal("arg-reduction over an empty axis reached the kernel".into()));
    }
    let code = op.code();
    let p = pipeline(ctx, Kernel::Reduce, x.dtype, "argreduce", &[("ROP", code)])?;
    let out = alloc(s, crate::dtype::DType::U32, n_out)?;
    let w = lines("arg_reduce", n_out, len, inner)?;
    dispatch_1d(ctx, &p, &w, &[(1, x), (4, &out)], n_out)?;
    Ok(out)
}

pub(crate) fn scan(
    s: &Stream,
    op: ScanOp,
    x: &GpuBuffer,
    shape: &[usize],
    axis: usize,
    reverse: bool,
) -> Result<GpuBuffer> {
    let ctx = context()?;
    let (outer, len, inner) = split_axis(shape, axis);
    let code = op.combine().code();
    let p = pipeline(ctx, Kernel::Reduce, x.dtype, "scan", &[("ROP", code)])?;
    let out = alloc(s, x.dtype, numel(shape))?;
    let n_lines = outer * inner;
    let w = ReduceParams { reverse: reverse as u32, ..lines("scan", n_lines, len, inner)? };
    dispatch_1d(ctx, &p, &w, &[(1, x), (3, &out)], n_lines)?;
    Ok(out)
}
