//! Reductions (over any set of axes), arg-reductions and scans (along one axis).
//!
//! Runs of adjacent reduced axes are merged into one; separate runs are reduced one
//! after another, from the last. A run is `[outer, len, inner]`: contiguous long rows
//! (inner 1) get a workgroup each (tree reduction, 16-byte loads where rows are whole
//! vectors), everything else one thread per output walking `len` (neighbouring threads
//! read neighbouring columns); too few such outputs to fill the device (a sum over the
//! rows of a wide matrix) first reduce slices of `len` into partials, then the partials.
//! Arg-reductions and scans of long contiguous rows also get a workgroup per row
//! (parallel along the row); other lines a thread each.

use super::buffer::{GpuBuffer, alloc};
use super::context::context;
use super::encoder::{dispatch, dispatch_1d, grid};
use super::params::ReduceParams;
use super::pipeline::pipeline;
use super::shader::Kernel;
use super::u32_param;
use crate::dtype::DType;
use crate::error::Result;
use crate::primitive::{ArgReduceOp, ReduceOp, ScanOp};
use crate::shape::numel;
use crate::shape::split_axis;
use crate::stream::Stream;

/// Rows at least this long get a workgroup each.
const WG_ROW_MIN: usize = 256;
/// Longest stretch of a row one workgroup reduces (64 elements per thread).
const SEGMENT: usize = 256 * 64;
/// Threads a line reduction should have at least: an H200 keeps about 270K resident. With
/// one thread per output, a sum over axis 0 of a 32768x8192 matrix ran 8192 threads and
/// moved 85 GB/s.
const LINES_MIN_THREADS: usize = 1 << 17;
/// Shortest slice of a line one thread reduces when lines are split.
const LINES_MIN_SLICE: usize = 32;

/// Into how many slices to cut lines of `len` when there are only `n_out` of them: the
/// largest divisor of `len` that brings the threads to [`LINES_MIN_THREADS`] with slices of
/// at least [`LINES_MIN_SLICE`]; `None` when enough threads run already (or no divisor helps).
fn line_slices(n_out: usize, len: usize) -> Option<usize> {
    if n_out >= LINES_MIN_THREADS {
        return None;
    }
    let most = LINES_MIN_THREADS.div_ceil(n_out).min(len / LINES_MIN_SLICE);
    (2..=most).rev().find(|c| len.is_multiple_of(*c))
}

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
    if x.dtype == DType::F16 && !axes.is_empty() {
        // Half types accumulate in f32 through every pass (segment partials, separate runs
        // of axes) and round once: f16 partial sums overflowed or lost precision.
        let wide = reduce_passes(s, op, x, shape, axes, true)?;
        let n = shape.iter().enumerate().filter(|(a, _)| !axes.contains(a)).map(|(_, &d)| d).product();
        return super::elementwise::astype(s, &wide, DType::F16, n);
    }
    reduce_passes(s, op, x, shape, axes, false)
}

/// The passes of [`reduce`]; with `widen`, a half-type input's first pass stores the f32
/// accumulator and the later passes run in f32 (the result is then f32).
fn reduce_passes(
    s: &Stream,
    op: ReduceOp,
    x: &GpuBuffer,
    shape: &[usize],
    axes: &[usize],
    widen: bool,
) -> Result<GpuBuffer> {
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
        super::encoder::copy(s, x, &out, out.bytes)?;
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
        // Widening: the pass over the f16 input stores f32 (the `_acc` entry points, slot
        // 5); later passes read and write f32.
        let acc = widen && src.dtype != DType::F32;
        let (out_dtype, slot) = if widen { (DType::F32, if acc { 5 } else { 3 }) } else { (x.dtype, 3) };
        let out = alloc(s, out_dtype, n_out)?;
        if inner == 1 && len >= WG_ROW_MIN {
            // Vector loads for rows of whole vectors (not when widening: `_acc` stores A).
            let v4 = !widen && len.is_multiple_of(4);
            let entry = match (acc, v4) {
                (true, _) => "reduce_rows_acc",
                (false, true) => "reduce_rows_v4",
                (false, false) => "reduce_rows",
            };
            let src_slot = if v4 { 7 } else { 1 };
            let p = pipeline(ctx, Kernel::Reduce, src.dtype, entry, &[("ROP", code)])?;
            let segs = len.div_ceil(SEGMENT);
            let parts = if segs > 1 { alloc(s, out_dtype, n_out * segs)? } else { alloc(s, out_dtype, 0)? };
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
            dispatch(s, &p, &w, &[(src_slot, src), (slot, target)], g)?;
            if segs > 1 {
                // Partial results of each row, reduced in a second pass (in f32 when widening).
                let r = reduce_passes(s, op, &parts, &[n_out, segs], &[1], widen)?;
                super::encoder::copy(s, &r, &out, out.bytes)?;
            }
        } else if let Some(c) = line_slices(n_out, len) {
            // Partials of `c` slices per line, then the partials (in f32 when widening).
            let parts = reduce_passes(s, op, src, &[outer, c, len / c, inner], &[2], widen)?;
            let r = reduce_passes(s, op, &parts, &[outer, c, inner], &[1], widen)?;
            super::encoder::copy(s, &r, &out, out.bytes)?;
        } else {
            let entry = if acc { "reduce_lines_acc" } else { "reduce_lines" };
            let p = pipeline(ctx, Kernel::Reduce, src.dtype, entry, &[("ROP", code)])?;
            let w = lines("reduce", n_out, len, inner)?;
            dispatch_1d(s, &p, &w, &[(1, src), (slot, &out)], n_out)?;
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
    let out = alloc(s, crate::dtype::DType::U32, n_out)?;
    let w = lines("arg_reduce", n_out, len, inner)?;
    if inner == 1 && len >= WG_ROW_MIN {
        // Long contiguous rows: a workgroup each, parallel along the row.
        let p = pipeline(ctx, Kernel::Reduce, x.dtype, "argreduce_rows", &[("ROP", code)])?;
        dispatch(s, &p, &w, &[(1, x), (4, &out)], grid(ctx, n_out * 256)?)?;
        return Ok(out);
    }
    let p = pipeline(ctx, Kernel::Reduce, x.dtype, "argreduce", &[("ROP", code)])?;
    dispatch_1d(s, &p, &w, &[(1, x), (4, &out)], n_out)?;
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
    let out = alloc(s, x.dtype, numel(shape))?;
    let n_lines = outer * inner;
    let w = ReduceParams { reverse: reverse as u32, ..lines("scan", n_lines, len, inner)? };
    // A running product runs each row in order on one thread. The parallel form combines
    // the product of earlier chunks with a later chunk's own, and where that one
    // overflowed after a 0 it gave 0 * inf = NaN where the row's running product is 0
    // (the differential tests against NumPy, session 22). Sums and extrema combine in any
    // order (sums within rounding).
    let parallel = match op {
        ScanOp::Sum | ScanOp::Max | ScanOp::Min => true,
        ScanOp::Prod => false,
    };
    if parallel && inner == 1 && len >= WG_ROW_MIN {
        // Long contiguous rows: a workgroup each, parallel along the row.
        let p = pipeline(ctx, Kernel::Reduce, x.dtype, "scan_rows", &[("ROP", code)])?;
        dispatch(s, &p, &w, &[(1, x), (3, &out)], grid(ctx, n_lines * 256)?)?;
        return Ok(out);
    }
    let p = pipeline(ctx, Kernel::Reduce, x.dtype, "scan", &[("ROP", code)])?;
    dispatch_1d(s, &p, &w, &[(1, x), (3, &out)], n_lines)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{LINES_MIN_SLICE, LINES_MIN_THREADS, line_slices};

    #[test]
    fn few_long_lines_are_sliced() {
        // 8192 columns of 32768: 16 slices of 2048 make 2^17 threads.
        assert_eq!(line_slices(8192, 32768), Some(16));
        assert_eq!(line_slices(LINES_MIN_THREADS, 1 << 20), None, "enough threads already");
        assert_eq!(line_slices(10, 997), None, "a prime length has no slices");
        assert_eq!(line_slices(1000, 3 * LINES_MIN_SLICE), Some(3), "slices stay long enough");
        assert_eq!(line_slices(4, 40), None, "too short to slice");
    }
}
