//! Elementwise kernels: unary, binary with broadcasting, select.
use super::storage::CpuData;
use crate::error::Result;
use crate::primitive::{BinaryOp, UnaryOp};

pub(super) fn unary(op: UnaryOp, x: &CpuData) -> Result<CpuData> {
    Err(super::unsupported(&format!("{op:?}"), x.dtype()))
}
pub(super) fn binary(op: BinaryOp, a: &CpuData, _sa: &[usize], _b: &CpuData, _sb: &[usize], _out: &[usize]) -> Result<CpuData> {
    Err(super::unsupported(&format!("{op:?}"), a.dtype()))
}
pub(super) fn select(ins: &[&CpuData], _shapes: &[&[usize]], _out: &[usize]) -> Result<CpuData> {
    Err(super::unsupported("where", ins[1].dtype()))
}
