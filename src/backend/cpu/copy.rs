//! Data movement: strided views, concatenation, gather, scatter.
use super::storage::CpuData;
use crate::error::Result;
use crate::primitive::ScatterMode;

pub(super) fn as_strided(x: &CpuData, _shape: &[usize], _strides: &[isize], _offset: usize) -> CpuData {
    x.clone()
}
pub(super) fn concatenate(ins: &[&CpuData], _shapes: &[&[usize]], _axis: usize, _out: &[usize]) -> CpuData {
    ins[0].clone()
}
pub(super) fn gather(x: &CpuData, _sx: &[usize], _idx: &CpuData, _si: &[usize], _axis: usize) -> Result<CpuData> {
    Err(super::unsupported("gather", x.dtype()))
}
pub(super) fn scatter(ins: &[&CpuData], _shapes: &[&[usize]], _axis: usize, _mode: ScatterMode) -> Result<CpuData> {
    Err(super::unsupported("scatter", ins[0].dtype()))
}
