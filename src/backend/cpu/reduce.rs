//! Reductions, arg-reductions and scans.
use super::storage::CpuData;
use crate::error::Result;
use crate::primitive::{ArgReduceOp, ReduceOp, ScanOp};

pub(super) fn reduce(op: ReduceOp, x: &CpuData, _shape: &[usize], _axes: &[usize]) -> Result<CpuData> {
    Err(super::unsupported(&format!("{op:?}"), x.dtype()))
}
pub(super) fn arg_reduce(_op: ArgReduceOp, _x: &CpuData, _shape: &[usize], _axis: usize) -> CpuData {
    CpuData::U32(vec![])
}
pub(super) fn scan(op: ScanOp, x: &CpuData, _shape: &[usize], _axis: usize, _reverse: bool) -> Result<CpuData> {
    Err(super::unsupported(&format!("{op:?}"), x.dtype()))
}
