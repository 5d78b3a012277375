//! Data movement: strided views, concatenation, gather, scatter.

use super::storage::{CpuData, CpuElem, map_data};
use crate::error::{Error, Result};
use crate::primitive::ScatterMode;
use crate::shape::{StridedIter, contiguous_strides, numel, split_axis};

pub(super) fn as_strided(x: &CpuData, shape: &[usize], strides: &[isize], offset: usize) -> CpuData {
    map_data!(x, |v| StridedIter::new(shape, strides, offset as isize).map(|i| v[i]).collect())
}

pub(super) fn concatenate(ins: &[&CpuData], shapes: &[&[usize]], axis: usize, out: &[usize]) -> CpuData {
    // `_first` only fixes `T`: the typed slice of the first input.
    fn cat<T: CpuElem>(_first: &[T], ins: &[&CpuData], shapes: &[&[usize]], axis: usize, out: &[usize]) -> Vec<T> {
        let (outer, _, inner) = split_axis(out, axis);
        let mut v: Vec<T> = Vec::with_capacity(numel(out));
        for o in 0..outer {
            for (d, s) in ins.iter().zip(shapes) {
                let src = T::unwrap(d).expect("concatenate inputs share a dtype");
                let block = s[axis] * inner;
                v.extend_from_slice(&src[o * block..(o + 1) * block]);
            }
        }
        v
    }
    map_data!(ins[0], |v| cat(v, ins, shapes, axis, out))
}

/// Index values as i64, whatever their integer dtype.
fn indices(idx: &CpuData) -> Result<Vec<i64>> {
    Ok(match idx {
        CpuData::I32(v) => v.iter().map(|&x| x as i64).collect(),
        CpuData::U32(v) => v.iter().map(|&x| x as i64).collect(),
        CpuData::I64(v) => v.clone(),
        CpuData::Bool(_) | CpuData::F16(_) | CpuData::BF16(_) | CpuData::F32(_) | CpuData::F64(_) => {
            return Err(Error::Internal(format!("indices must be integers, got {}", idx.dtype())));
        }
    })
}

/// Wraps negative indices once; `None` when still out of range.
fn wrap_index(i: i64, n: usize) -> Option<usize> {
    let j = if i < 0 { i + n as i64 } else { i };
    (0..n as i64).contains(&j).then_some(j as usize)
}

/// Source offsets for each element of an index array of shape `si` along `axis`
/// into an array of shape `sx`; out-of-range indices are clamped (gather) or
/// reported as `None` (scatter).
fn offsets(sx: &[usize], si: &[usize], idx: &[i64], axis: usize, clamp: bool) -> Vec<Option<usize>> {
    let xs = contiguous_strides(sx);
    let n = sx[axis];
    let mut out = Vec::with_capacity(idx.len());
    let mut pos = vec![0usize; si.len()];
    for &raw in idx {
        let j = match wrap_index(raw, n) {
            Some(j) => Some(j),
            None if clamp => Some(if raw < 0 { 0 } else { n.saturating_sub(1) }),
            None => None,
        };
        out.push(j.map(|j| {
            pos.iter().enumerate().map(|(d, &p)| if d == axis { j } else { p } as isize * xs[d]).sum::<isize>() as usize
        }));
        for d in (0..si.len()).rev() {
            pos[d] += 1;
            if pos[d] < si[d] {
                break;
            }
            pos[d] = 0;
        }
    }
    out
}

pub(super) fn gather(x: &CpuData, sx: &[usize], idx: &CpuData, si: &[usize], axis: usize) -> Result<CpuData> {
    if sx[axis] == 0 {
        return Err(Error::Internal("gather from an empty axis reached the kernel".into()));
    }
    let offs = offsets(sx, si, &indices(idx)?, axis, true);
    Ok(map_data!(x, |v| offs.iter().map(|o| v[o.unwrap_or(0)]).collect()))
}

pub(super) fn scatter(ins: &[&CpuData], shapes: &[&[usize]], axis: usize, mode: ScatterMode) -> Result<CpuData> {
    let offs = offsets(shapes[0], shapes[1], &indices(ins[1])?, axis, false);
    fn go<T: CpuElem>(dst: &[T], upd: &CpuData, offs: &[Option<usize>], add: bool) -> Vec<T> {
        let upd = T::unwrap(upd).expect("scatter updates share the destination dtype");
        let mut out = dst.to_vec();
        for (o, &u) in offs.iter().zip(upd) {
            if let Some(o) = *o {
                out[o] = if add { out[o].accumulate(u) } else { u };
            }
        }
        out
    }
    let add = mode == ScatterMode::Add;
    Ok(map_data!(ins[0], |v| go(v, ins[2], &offs, add)))
}
