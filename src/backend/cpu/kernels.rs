//! The CPU kernel table: one `Kernel<Args>` impl per primitive. `backend::dispatch`,
//! generated from [`crate::for_each_primitive!`], runs them: a primitive without an impl
//! here fails to compile.

use super::storage::CpuData;
use super::{copy, elementwise, matmul, random, reduce, wrap};
use crate::backend::{Buffer, Input, Kernel};
use crate::error::Result;
use crate::primitive::{self as p, MatmulPlan, Meta};
use smallvec::SmallVec;

/// What a CPU kernel gets: typed inputs, their shapes, the raw inputs (for kernels that
/// pass a buffer through) and the output's meta.
pub(super) struct Args<'a> {
    /// Inline: a kernel call per op, and most take one or two inputs.
    pub(super) ins: SmallVec<[&'a CpuData; 3]>,
    pub(super) shapes: SmallVec<[&'a [usize]; 3]>,
    pub(super) raw: &'a [Input<'a>],
    pub(super) out: &'a Meta,
}

impl Args<'_> {
    fn n(&self) -> usize {
        self.out.numel()
    }
}

/// Kernels that make new data.
macro_rules! kernel {
    ($t:ty, |$s:ident, $a:ident| $body:expr) => {
        impl Kernel<Args<'_>> for $t {
            fn run(&self, $a: &Args<'_>) -> Result<Buffer> {
                let $s = self;
                Ok(wrap($body))
            }
        }
    };
}

kernel!(p::Full, |s, a| CpuData::filled(s.dtype, a.n(), s.value));
kernel!(p::Arange, |s, a| CpuData::from_f64s(s.dtype, (0..a.n()).map(|i| s.start + i as f64 * s.step)));
kernel!(p::RandomBits, |_s, a| random::random_bits(a.ins[0], a.n())?);
kernel!(p::Unary, |s, a| elementwise::unary(s.op, a.ins[0])?);
kernel!(p::Binary, |s, a| elementwise::binary(s.op, a.ins[0], a.shapes[0], a.ins[1], a.shapes[1], &a.out.shape)?);
kernel!(p::Select, |_s, a| elementwise::select(&a.ins, &a.shapes, &a.out.shape)?);
kernel!(p::AsType, |s, a| a.ins[0].astype(s.dtype));
kernel!(p::AsStrided, |s, a| copy::as_strided(a.ins[0], &s.shape, &s.strides, s.offset));
kernel!(p::Reduce, |s, a| reduce::reduce(s.op, a.ins[0], a.shapes[0], &s.axes)?);
kernel!(p::ArgReduce, |s, a| reduce::arg_reduce(s.op, a.ins[0], a.shapes[0], s.axis));
kernel!(p::Scan, |s, a| reduce::scan(s.op, a.ins[0], a.shapes[0], s.axis, s.reverse)?);
kernel!(p::Concatenate, |s, a| copy::concatenate(&a.ins, &a.shapes, s.axis, &a.out.shape));
kernel!(p::Gather, |s, a| copy::gather(a.ins[0], a.shapes[0], a.ins[1], a.shapes[1], s.axis)?);
kernel!(p::Scatter, |s, a| copy::scatter(&a.ins, &a.shapes, s.axis, s.mode)?);
kernel!(p::Matmul, |s, a| {
    let plan = MatmulPlan::new(a.shapes[0], a.shapes[1], (s.trans_a, s.trans_b))?;
    matmul::matmul(a.ins[0], a.ins[1], &plan)?
});

/// Views of the same host data: the input buffer is the output.
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
