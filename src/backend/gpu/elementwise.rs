//! Elementwise kernels: unary, binary and comparisons with broadcasting, select, astype.

use super::buffer::{GpuBuffer, alloc};
use super::context::context;
use super::encoder::dispatch_1d;
use super::params::EwParams;
use super::pipeline::{check_rank, pipeline};
use super::shader::Kernel;
use super::{i32_param, u32_param};
use crate::dtype::DType;
use crate::error::Result;
use crate::primitive::{BinaryOp, Meta, UnaryOp};
use crate::shape::{broadcast_strides, merge_axes};
use crate::stream::Stream;

pub(crate) fn unary(s: &Stream, op: UnaryOp, x: &GpuBuffer, out_dtype: DType, n: usize) -> Result<GpuBuffer> {
    let ctx = context()?;
    let code = op.code();
    // Bool results of non-bool inputs (isnan, isinf, logical_not of numbers).
    let pred = out_dtype == DType::Bool && x.dtype != DType::Bool;
    let (entry, slot) = if pred { ("unary_pred_v4", 10) } else { ("unary_v4", 9) };
    let p = pipeline(ctx, Kernel::Elementwise, x.dtype, entry, &[("OP", code)])?;
    let out = alloc(s, out_dtype, n)?;
    let v = n.div_ceil(4);
    let w = EwParams { n: u32_param("unary", v)?, ..Default::default() };
    dispatch_1d(s, &p, &w, &[(7, x), (slot, &out)], v)?;
    Ok(out)
}

/// Parameters of the broadcasting kernels: the merged output shape and each input's
/// broadcast strides; inputs of the output's size are read flat.
fn broadcast_params(op: &str, out_shape: &[usize], in_shapes: &[&[usize]]) -> Result<EwParams> {
    let n = crate::shape::numel(out_shape);
    let strides: Vec<Vec<isize>> = in_shapes.iter().map(|s| broadcast_strides(s, out_shape)).collect();
    let (shape, strides) = merge_axes(out_shape, &strides);
    check_rank(op, shape.len())?;
    let mut w = EwParams { n: u32_param(op, n)?, rank: shape.len() as u32, ..Default::default() };
    for (k, s) in in_shapes.iter().enumerate() {
        if *s == out_shape || crate::shape::numel(s) == n {
            w.flat |= 1 << k;
        }
    }
    for (i, &d) in shape.iter().enumerate() {
        w.shape[i] = u32_param(op, d)?;
        for (k, st) in strides.iter().enumerate() {
            w.strides[k][i] = i32_param(op, st[i])?;
        }
    }
    Ok(w)
}

pub(crate) fn binary(
    s: &Stream,
    op: BinaryOp,
    ins: &[&GpuBuffer],
    shapes: &[&[usize]],
    out: &Meta,
) -> Result<GpuBuffer> {
    let ctx = context()?;
    let n = crate::shape::numel(&out.shape);
    let code = op.code();
    let words = broadcast_params("binary", &out.shape, shapes)?;
    let o = alloc(s, out.dtype, n)?;
    if words.flat == 0b11 {
        // Both inputs flat: four elements a thread, 16-byte loads (`_v4` kernels).
        let (entry, slot) = if op.is_comparison() { ("compare_v4", 10) } else { ("binary_v4", 9) };
        let p = pipeline(ctx, Kernel::Elementwise, ins[0].dtype, entry, &[("OP", code)])?;
        let v = n.div_ceil(4);
        let w = EwParams { n: u32_param("binary", v)?, ..Default::default() };
        dispatch_1d(s, &p, &w, &[(7, ins[0]), (8, ins[1]), (slot, &o)], v)?;
        return Ok(o);
    }
    let (entry, slot) = if op.is_comparison() { ("compare", 4) } else { ("binary", 3) };
    let p = pipeline(ctx, Kernel::Elementwise, ins[0].dtype, entry, &[("OP", code)])?;
    dispatch_1d(s, &p, &words, &[(1, ins[0]), (2, ins[1]), (slot, &o)], n)?;
    Ok(o)
}

/// `where(cond, x, y)`.
pub(crate) fn select(s: &Stream, ins: &[&GpuBuffer], shapes: &[&[usize]], out: &Meta) -> Result<GpuBuffer> {
    let ctx = context()?;
    let n = crate::shape::numel(&out.shape);
    let p = pipeline(ctx, Kernel::Elementwise, ins[1].dtype, "select_t", &[])?;
    let words = broadcast_params("where", &out.shape, shapes)?;
    let o = alloc(s, out.dtype, n)?;
    dispatch_1d(s, &p, &words, &[(5, ins[0]), (1, ins[1]), (2, ins[2]), (3, &o)], n)?;
    Ok(o)
}

pub(crate) fn astype(s: &Stream, x: &GpuBuffer, to: DType, n: usize) -> Result<GpuBuffer> {
    let ctx = context()?;
    let p = pipeline(ctx, Kernel::Elementwise, to, "astype", &[("IN_KIND", x.dtype.code())])?;
    let o = alloc(s, to, n)?;
    let w = EwParams { n: u32_param("astype", n)?, ..Default::default() };
    dispatch_1d(s, &p, &w, &[(6, x), (3, &o)], n)?;
    Ok(o)
}
