//! Counter-based random bits: Threefry-2x32 with 20 rounds (Salmon et al., 2011; the
//! generator JAX and MLX use). Each output element is a pure function of the key and its
//! flat index, so results never depend on device, thread count or chunking. This file is
//! the reference every backend reproduces.

use rayon::prelude::*;

use super::PAR_MIN;
use super::storage::CpuData;
use crate::error::{Error, Result};

const ROTATIONS: [[u32; 4]; 2] = [[13, 15, 26, 6], [17, 29, 16, 24]];

/// Threefry-2x32-20 of counter `(x0, x1)` under key `(k0, k1)`.
pub fn threefry2x32(k0: u32, k1: u32, mut x0: u32, mut x1: u32) -> (u32, u32) {
    let ks = [k0, k1, k0 ^ k1 ^ 0x1BD1_1BDA];
    x0 = x0.wrapping_add(ks[0]);
    x1 = x1.wrapping_add(ks[1]);
    for i in 0..5 {
        for &r in &ROTATIONS[i % 2] {
            x0 = x0.wrapping_add(x1);
            x1 = x1.rotate_left(r) ^ x0;
        }
        let s = i + 1;
        x0 = x0.wrapping_add(ks[s % 3]);
        x1 = x1.wrapping_add(ks[(s + 1) % 3]).wrapping_add(s as u32);
    }
    (x0, x1)
}

pub(super) fn random_bits(key: &CpuData, n: usize) -> Result<CpuData> {
    let CpuData::U32(k) = key else {
        return Err(Error::Internal(format!("random_bits: key must be uint32, got {}", key.dtype())));
    };
    if k.len() != 2 {
        return Err(Error::Internal(format!("random_bits: key must have 2 elements, got {}", k.len())));
    }
    let f = |i: usize| threefry2x32(k[0], k[1], i as u32, (i as u64 >> 32) as u32).0;
    Ok(CpuData::U32(if n >= PAR_MIN { (0..n).into_par_iter().map(f).collect() } else { (0..n).map(f).collect() }))
}

#[cfg(test)]
mod tests {
    use super::threefry2x32;

    /// Known-answer vectors from the Random123 distribution (kat_vectors, threefry2x32_20).
    #[test]
    fn known_answers() {
        assert_eq!(threefry2x32(0, 0, 0, 0), (0x6b200159, 0x99ba4efe));
        assert_eq!(threefry2x32(u32::MAX, u32::MAX, u32::MAX, u32::MAX), (0x1cb996fc, 0xbb002be7));
        assert_eq!(threefry2x32(0x13198a2e, 0x03707344, 0x243f6a88, 0x85a308d3), (0xc4923a9c, 0x483df7a0));
    }
}
