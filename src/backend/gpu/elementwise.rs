//! Elementwise kernels: unary, binary and comparisons with broadcasting, select, astype.

use super::buffer::{GpuBuffer, alloc};
use super::context::context;
use super::encoder::dispatch_1d;
use super::pipeline::{MAX_RANK, check_rank, pipeline};
use super::shader::Kernel;
use super::{i32_param, u32_param};
use crate::dtype::DType;
use crate::error::Result;
use crate::primitive::{BinaryOp, Meta, UnaryOp};
use crate::shape::broadcast_strides;
use crate::stream::Stream;

/// The op's code in the shaders: the Rust enum's declaration order.
fn unary_code(op: UnaryOp) -> u32 {
    use UnaryOp::*;
    const ORDER: [UnaryOp; 24] = [
        Neg, Abs, Sign, Square, Floor, Ceil, Round, Exp, Expm1, Log, Log1p, Log2, Sqrt, Rsqrt, Reciprocal, Sin, Cos,
        Tan, Tanh, Sigmoid, Erf, IsNan, IsInf, LogicalNot,
    ];
    ORDER.iter().position(|&o| o == op).unwrap_or(usize::MAX) as u32
}

fn binary_code(op: BinaryOp) -> u32 {
    use BinaryOp::*;
    const ORDER: [BinaryOp; 18] = [
        Add,
        Sub,
        Mul,
        Div,
        Pow,
        Remainder,
        FloorDivide,
        Maximum,
        Minimum,
        Eq,
        Ne,
        Lt,
        Le,
        Gt,
        Ge,
        LogicalAnd,
        LogicalOr,
        LogicalXor,
    ];
    ORDER.iter().position(|&o| o == op).unwrap_or(usize::MAX) as u32
}

pub(crate) fn unary(s: &Stream, op: UnaryOp, x: &GpuBuffer, out_dtype: DType, n: usize) -> Result<GpuBuffer> {
    let ctx = context()?;
    let code = unary_code(op);
    if code == u32::MAX {
        return Err(super::unsupported(format!("unary op {op:?} has no GPU kernel")));
    }
    // Bool results of non-bool inputs (isnan, isinf, logical_not of numbers).
    let pred = out_dtype == DType::Bool && x.dtype != DType::Bool;
    let entry = if pred { "unary_pred" } else { "unary" };
    let slot = if entry == "unary" { 3 } else { 4 };
    let p = pipeline(ctx, Kernel::Elementwise, x.dtype, entry, &[("OP", code)])?;
    let out = alloc(s, out_dtype, n)?;
    dispatch_1d(ctx, &p, &[u32_param("unary", n)?], &[(1, x), (slot, &out)], n)?;
    Ok(out)
}

/// Merges output axes that every input walks contiguously (and drops size-1 axes), so
/// the strided kernels see the smallest rank. Returns the shape and per-input strides.
pub(crate) fn merge_axes(shape: &[usize], strides: &[Vec<isize>]) -> (Vec<usize>, Vec<Vec<isize>>) {
    let mut out_shape: Vec<usize> = Vec::new();
    let mut out_strides: Vec<Vec<isize>> = vec![Vec::new(); strides.len()];
    for ax in 0..shape.len() {
        let d = shape[ax];
        if d == 1 {
            continue;
        }
        let mergeable = !out_shape.is_empty()
            && strides.iter().zip(&out_strides).all(|(s, o)| *o.last().expect("same rank") == s[ax] * d as isize);
        if mergeable {
            *out_shape.last_mut().expect("non-empty") *= d;
            for (o, s) in out_strides.iter_mut().zip(strides) {
                *o.last_mut().expect("non-empty") = s[ax];
            }
        } else {
            out_shape.push(d);
            for (o, s) in out_strides.iter_mut().zip(strides) {
                o.push(s[ax]);
            }
        }
    }
    (out_shape, out_strides)
}

/// Parameters of the broadcasting kernels: n, rank, flags, 0, shape[8], strides[3][8].
fn broadcast_params(op: &str, out_shape: &[usize], in_shapes: &[&[usize]]) -> Result<Vec<u32>> {
    let n = crate::shape::numel(out_shape);
    let strides: Vec<Vec<isize>> = in_shapes.iter().map(|s| broadcast_strides(s, out_shape)).collect();
    let (shape, strides) = merge_axes(out_shape, &strides);
    check_rank(op, shape.len())?;
    let mut w = vec![0u32; 36];
    w[0] = u32_param(op, n)?;
    w[1] = shape.len() as u32;
    for (k, s) in in_shapes.iter().enumerate() {
        if *s == out_shape || crate::shape::numel(s) == n {
            w[2] |= 1 << k;
        }
    }
    for (i, &d) in shape.iter().enumerate() {
        w[4 + i] = u32_param(op, d)?;
        for (k, st) in strides.iter().enumerate() {
            w[12 + 8 * k + i] = i32_param(op, st[i])?;
        }
    }
    debug_assert!(shape.len() <= MAX_RANK);
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
    let code = binary_code(op);
    if code == u32::MAX {
        return Err(super::unsupported(format!("binary op {op:?} has no GPU kernel")));
    }
    let (entry, slot) = if op.is_comparison() { ("compare", 4) } else { ("binary", 3) };
    let p = pipeline(ctx, Kernel::Elementwise, ins[0].dtype, entry, &[("OP", code)])?;
    let words = broadcast_params("binary", &out.shape, shapes)?;
    let o = alloc(s, out.dtype, n)?;
    dispatch_1d(ctx, &p, &words, &[(1, ins[0]), (2, ins[1]), (slot, &o)], n)?;
    Ok(o)
}

/// `where(cond, x, y)`.
pub(crate) fn select(s: &Stream, ins: &[&GpuBuffer], shapes: &[&[usize]], out: &Meta) -> Result<GpuBuffer> {
    let ctx = context()?;
    let n = crate::shape::numel(&out.shape);
    let p = pipeline(ctx, Kernel::Elementwise, ins[1].dtype, "select_t", &[])?;
    let words = broadcast_params("where", &out.shape, shapes)?;
    let o = alloc(s, out.dtype, n)?;
    dispatch_1d(ctx, &p, &words, &[(5, ins[0]), (1, ins[1]), (2, ins[2]), (3, &o)], n)?;
    Ok(o)
}

pub(crate) fn astype(s: &Stream, x: &GpuBuffer, to: DType, n: usize) -> Result<GpuBuffer> {
    let ctx = context()?;
    let kind = match x.dtype {
        DType::Bool => 0,
        DType::U32 => 1,
        DType::I32 => 2,
        DType::F32 => 3,
        _ => 4,
    };
    let p = pipeline(ctx, Kernel::Elementwise, to, "astype", &[("IN_KIND", kind)])?;
    let o = alloc(s, to, n)?;
    dispatch_1d(ctx, &p, &[u32_param("astype", n)?], &[(6, x), (3, &o)], n)?;
    Ok(o)
}
