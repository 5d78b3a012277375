//! Creation kernels: constant fill and arange.

use super::buffer::{GpuBuffer, alloc, device_elem_size};
use super::context::context;
use super::encoder::dispatch_1d;
use super::params::FillParams;
use super::pipeline::pipeline;
use super::shader::Kernel;
use super::u32_param;
use crate::dtype::{DType, f64s_to_bytes};
use crate::error::Result;
use crate::stream::Stream;

/// `n` copies of `value` cast to `dtype` with the host's `as` rules: the cast is done
/// once on the host, the kernel writes its bit pattern.
pub(crate) fn full(stream: &Stream, dtype: DType, n: usize, value: f64) -> Result<GpuBuffer> {
    let ctx = context()?;
    let host = f64s_to_bytes(dtype, std::iter::once(value));
    let pattern = match dtype {
        DType::Bool => host[0] as u32,
        DType::F16 => {
            let h = u16::from_le_bytes([host[0], host[1]]) as u32;
            h | (h << 16)
        }
        DType::U32 | DType::I32 | DType::F32 => u32::from_le_bytes([host[0], host[1], host[2], host[3]]),
        DType::I64 | DType::BF16 | DType::F64 => {
            return Err(super::unsupported(format!("full: {dtype} is not supported on the GPU")));
        }
    };
    let out = alloc(stream, dtype, n)?;
    let words = (n as u64 * device_elem_size(dtype)).div_ceil(4) as usize;
    let p = pipeline(ctx, Kernel::Fill, dtype, "fill", &[])?;
    let w = FillParams { n: u32_param("full", words)?, word: pattern, ..Default::default() };
    dispatch_1d(stream, &p, &w, &[(4, &out)], words)?;
    Ok(out)
}

/// `out[i] = start + i * step` as the host computes it in f64, then cast. Integral
/// aranges whose values all fit the dtype run on the GPU in exact integer arithmetic;
/// the rest (float dtypes, fractional steps) are computed on the host and uploaded, as
/// WGSL has no f64 and double-f32 emulation does not survive drivers that reassociate.
pub(crate) fn arange(stream: &Stream, dtype: DType, n: usize, start: f64, step: f64) -> Result<GpuBuffer> {
    let ctx = context()?;
    let last = start + (n.saturating_sub(1)) as f64 * step;
    let integral = start.fract() == 0.0 && step.fract() == 0.0 && step.abs() < 2f64.powi(31);
    let in_range = |lo: f64, hi: f64| start.min(last) >= lo && start.max(last) <= hi;
    let int_mode = integral
        && match dtype {
            DType::I32 | DType::Bool => in_range(i32::MIN as f64, i32::MAX as f64),
            DType::U32 => in_range(0.0, u32::MAX as f64),
            DType::I64 | DType::F16 | DType::BF16 | DType::F32 | DType::F64 => false,
        };
    if !int_mode {
        // Before the host computes `n` values: a size the device refuses must not first
        // be allocated on the host.
        ctx.check_size("arange", n as u64 * device_elem_size(dtype))?;
        let host = f64s_to_bytes(dtype, (0..n).map(|i| start + i as f64 * step));
        return super::readback::upload(stream, dtype, &host);
    }
    let out = alloc(stream, dtype, n)?;
    // Wrapping mod 2^32 is exact for every representable value.
    let w =
        FillParams { n: u32_param("arange", n)?, word: 0, start: (start as i64) as i32, step: (step as i64) as i32 };
    let p = pipeline(ctx, Kernel::Fill, dtype, "arange", &[])?;
    dispatch_1d(stream, &p, &w, &[(3, &out)], n)?;
    Ok(out)
}
