//! Counter-based random bits: Threefry-2x32-20, bit-identical to the CPU reference
//! (`backend::cpu::random`), since every element depends only on the key and its index.

use super::buffer::{GpuBuffer, alloc};
use super::context::context;
use super::encoder::dispatch_1d;
use super::params::RandomParams;
use super::pipeline::pipeline;
use super::shader::Kernel;
use super::u32_param;
use crate::dtype::DType;
use crate::error::Result;
use crate::stream::Stream;

/// `n` U32 words from the `[k0, k1]` key buffer.
pub(crate) fn random_bits(s: &Stream, key: &GpuBuffer, n: usize) -> Result<GpuBuffer> {
    let ctx = context()?;
    let p = pipeline(ctx, Kernel::Random, DType::U32, "random_bits", &[])?;
    let out = alloc(s, DType::U32, n)?;
    let w = RandomParams { n: u32_param("random_bits", n)?, ..Default::default() };
    dispatch_1d(s, &p, &w, &[(1, key), (4, &out)], n)?;
    Ok(out)
}
