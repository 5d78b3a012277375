//! Counter-based random bits (Threefry-2x32, 20 rounds).
use super::storage::CpuData;
use crate::error::Result;

pub(super) fn random_bits(key: &CpuData, _n: usize) -> Result<CpuData> {
    Err(super::unsupported("random_bits", key.dtype()))
}
