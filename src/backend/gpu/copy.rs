//! Data movement kernels: strided views (`as_strided`) and concatenation.

use super::buffer::{GpuBuffer, alloc};
use super::context::context;
use super::encoder::dispatch_1d;
use super::params::CopyParams;
use super::pipeline::{check_rank, pipeline};
use super::shader::Kernel;
use super::{i32_param, u32_param};
use crate::error::Result;
use crate::primitive::Meta;
use crate::shape::split_axis;
use crate::shape::{merge_axes, numel};
use crate::stream::Stream;

pub(crate) fn as_strided(
    s: &Stream,
    x: &GpuBuffer,
    shape: &[usize],
    strides: &[isize],
    offset: usize,
) -> Result<GpuBuffer> {
    let ctx = context()?;
    let n = numel(shape);
    let (mshape, mstrides) = merge_axes(shape, &[strides.to_vec()]);
    check_rank("as_strided", mshape.len())?;
    let mut w = CopyParams {
        n: u32_param("as_strided", n)?,
        rank: mshape.len() as u32,
        offset: i32_param("as_strided", offset as isize)?,
        ..Default::default()
    };
    for (i, &d) in mshape.iter().enumerate() {
        w.shape[i] = u32_param("as_strided", d)?;
        w.strides[i] = i32_param("as_strided", mstrides[0][i])?;
    }
    let p = pipeline(ctx, Kernel::Copy, x.dtype, "strided", &[])?;
    let out = alloc(s, x.dtype, n)?;
    dispatch_1d(s, &p, &w, &[(1, x), (3, &out)], n)?;
    Ok(out)
}

/// One dispatch per non-empty input, each writing its slab of the output.
pub(crate) fn concatenate(
    s: &Stream,
    ins: &[&GpuBuffer],
    shapes: &[&[usize]],
    axis: usize,
    out: &Meta,
) -> Result<GpuBuffer> {
    let ctx = context()?;
    let o = alloc(s, out.dtype, numel(&out.shape))?;
    let p = pipeline(ctx, Kernel::Copy, out.dtype, "concat_into", &[])?;
    let (_, out_len, inner) = split_axis(&out.shape, axis);
    let mut at = 0usize;
    for (x, shape) in ins.iter().zip(shapes) {
        let n = numel(shape);
        let len = shape[axis];
        if n > 0 {
            let w = CopyParams {
                n: u32_param("concatenate", n)?,
                block: u32_param("concatenate", len * inner)?,
                out_block: u32_param("concatenate", out_len * inner)?,
                start: u32_param("concatenate", at * inner)?,
                ..Default::default()
            };
            dispatch_1d(s, &p, &w, &[(1, x), (3, &o)], n)?;
        }
        at += len;
    }
    Ok(o)
}
