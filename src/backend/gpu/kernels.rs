//! The GPU kernel table: one `Kernel<Args>` impl per primitive. `backend::dispatch`,
//! generated from [`crate::for_each_primitive!`], runs them: a primitive without an impl
//! here fails to compile.

use std::sync::Arc;

use super::buffer::GpuBuffer;
use super::{copy, elementwise, fill, index, matmul, random, reduce};
use crate::backend::{Buffer, Input, Kernel};
use crate::error::Result;
use crate::primitive::{self as p, MatmulPlan, Meta};
use crate::stream::Stream;

/// What a GPU kernel gets: the stream, typed inputs, their shapes, the raw inputs (for
/// kernels that pass a buffer through) and the output's meta.
pub(super) struct Args<'a> {
    pub(super) s: &'a Stream,
    pub(super) ins: Vec<&'a GpuBuffer>,
    pub(super) shapes: Vec<&'a [usize]>,
    pub(super) raw: &'a [Input<'a>],
    pub(super) out: &'a Meta,
}

impl Args<'_> {
    fn n(&self) -> usize {
        self.out.numel()
    }
}

/// Kernels that make a new buffer.
macro_rules! kernel {
    ($t:ty, |$s:ident, $a:ident| $body:expr) => {
        impl Kernel<Args<'_>> for $t {
            fn run(&self, $a: &Args<'_>) -> Result<Buffer> {
                let $s = self;
                Ok(Arc::new($body))
            }
        }
    };
}

kernel!(p::Full, |s, a| fill::full(a.s, s.dtype, a.n(), s.value)?);
kernel!(p::Arange, |s, a| fill::arange(a.s, s.dtype, a.n(), s.start, s.step)?);
kernel!(p::RandomBits, |_s, a| random::random_bits(a.s, a.ins[0], a.n())?);
kernel!(p::Unary, |s, a| elementwise::unary(a.s, s.op, a.ins[0], a.out.dtype, a.n())?);
kernel!(p::Binary, |s, a| elementwise::binary(a.s, s.op, &a.ins, &a.shapes, a.out)?);
kernel!(p::Select, |_s, a| elementwise::select(a.s, &a.ins, &a.shapes, a.out)?);
kernel!(p::AsType, |s, a| elementwise::astype(a.s, a.ins[0], s.dtype, a.n())?);
kernel!(p::AsStrided, |s, a| copy::as_strided(a.s, a.ins[0], &s.shape, &s.strides, s.offset)?);
kernel!(p::Concatenate, |s, a| copy::concatenate(a.s, &a.ins, &a.shapes, s.axis, a.out)?);
kernel!(p::Reduce, |s, a| reduce::reduce(a.s, s.op, a.ins[0], a.shapes[0], &s.axes)?);
kernel!(p::ArgReduce, |s, a| reduce::arg_reduce(a.s, s.op, a.ins[0], a.shapes[0], s.axis)?);
kernel!(p::Scan, |s, a| reduce::scan(a.s, s.op, a.ins[0], a.shapes[0], s.axis, s.reverse)?);
kernel!(p::Gather, |s, a| index::gather(a.s, &a.ins, &a.shapes, s.axis, a.out)?);
kernel!(p::Scatter, |s, a| index::scatter(a.s, &a.ins, &a.shapes, s.axis, s.mode)?);
kernel!(p::Matmul, |s, a| {
    let plan = MatmulPlan::new(a.shapes[0], a.shapes[1], (s.trans_a, s.trans_b))?;
    matmul::matmul(a.s, &a.ins, &plan)?
});

/// Views of the same device data: the input buffer is the output.
impl Kernel<Args<'_>> for p::Reshape {
    fn run(&self, a: &Args<'_>) -> Result<Buffer> {
        Ok(a.raw[0].buffer.clone())
    }
}
impl Kernel<Args<'_>> for p::DeviceCopy {
    fn run(&self, a: &Args<'_>) -> Result<Buffer> {
        Ok(a.raw[0].buffer.clone())
    }
}
impl Kernel<Args<'_>> for p::Marker {
    fn run(&self, a: &Args<'_>) -> Result<Buffer> {
        Ok(a.raw[self.index].buffer.clone())
    }
}

/// Eval hands fused nodes to the backend's fuser (or runs their decomposition), never to
/// the kernel table.
impl Kernel<Args<'_>> for p::Fused {
    fn run(&self, _: &Args<'_>) -> Result<Buffer> {
        Err(crate::error::Error::Internal(
            "a fused node reached the kernel table; eval runs it through the fuser".into(),
        ))
    }
}
