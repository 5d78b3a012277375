//! Gather and scatter along one axis.

use super::buffer::{GpuBuffer, alloc};
use super::context::context;
use super::encoder::{copy, dispatch_1d};
use super::params::IndexParams;
use super::pipeline::pipeline;
use super::shader::Kernel;
use super::u32_param;
use crate::dtype::DType;
use crate::error::Result;
use crate::primitive::{Meta, ScatterMode};
use crate::shape::numel;
use crate::shape::split_axis;
use crate::stream::Stream;

/// Inputs `(src, indices)`; output shaped like `indices`.
pub(crate) fn gather(
    s: &Stream,
    ins: &[&GpuBuffer],
    shapes: &[&[usize]],
    axis: usize,
    out: &Meta,
) -> Result<GpuBuffer> {
    let ctx = context()?;
    let (src, idx) = (ins[0], ins[1]);
    let n = numel(&out.shape);
    let src_len = shapes[0][axis];
    if src_len == 0 {
        // `Gather::infer` refuses this: there is nothing to clamp into.
        return Err(crate::error::Error::Internal("gather from an empty axis reached the kernel".into()));
    }
    let (_, idx_len, inner) = split_axis(shapes[1], axis);
    let signed = (idx.dtype == DType::I32) as u32;
    let p = pipeline(ctx, Kernel::Index, src.dtype, "gather", &[("SIGNED", signed)])?;
    let o = alloc(s, out.dtype, n)?;
    let w = IndexParams {
        n: u32_param("gather", n)?,
        len: u32_param("gather", idx_len * inner)?,
        inner: u32_param("gather", inner)?,
        axis_len: u32_param("gather", src_len)?,
    };
    dispatch_1d(s, &p, &w, &[(1, src), (2, idx), (3, &o)], n)?;
    Ok(o)
}

/// Inputs `(dst, indices, updates)`: the output starts as a copy of `dst`, then one
/// thread per column applies that column's updates in order.
pub(crate) fn scatter(
    s: &Stream,
    ins: &[&GpuBuffer],
    shapes: &[&[usize]],
    axis: usize,
    mode: ScatterMode,
) -> Result<GpuBuffer> {
    let ctx = context()?;
    let (dst, idx, upd) = (ins[0], ins[1], ins[2]);
    let o = alloc(s, dst.dtype, dst.len)?;
    copy(s, dst, &o, dst.bytes)?;
    let (outer, upd_len, inner) = split_axis(shapes[1], axis);
    let dst_len = shapes[0][axis];
    let columns = outer * inner;
    if columns == 0 || upd_len == 0 || dst_len == 0 {
        return Ok(o);
    }
    let signed = (idx.dtype == DType::I32) as u32;
    let p = pipeline(ctx, Kernel::Index, dst.dtype, "scatter", &[("SIGNED", signed), ("MODE", mode.code())])?;
    let w = IndexParams {
        n: u32_param("scatter", columns)?,
        len: u32_param("scatter", upd_len)?,
        inner: u32_param("scatter", inner)?,
        axis_len: u32_param("scatter", dst_len)?,
    };
    dispatch_1d(s, &p, &w, &[(2, idx), (5, upd), (3, &o)], columns)?;
    Ok(o)
}
