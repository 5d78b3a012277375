//! Matmul through the `gemm` crate.
use super::storage::CpuData;
use crate::error::Result;

pub(super) fn matmul(a: &CpuData, _sa: &[usize], _b: &CpuData, _sb: &[usize], _out: &[usize]) -> Result<CpuData> {
    Err(super::unsupported("matmul", a.dtype()))
}
