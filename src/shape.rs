//! Shapes, strides, broadcasting and axis normalisation. Pure functions, no arrays.
//!
//! For backend authors: the index arithmetic the crate's own kernels use (a kernel gets
//! contiguous inputs plus the shapes and strides its primitive names). Array users need
//! none of it.

use crate::error::{Error, Result};

/// A shape: inline up to four axes, so the shapes of most nodes allocate nothing.
pub type Shape = smallvec::SmallVec<[usize; 4]>;

/// Number of elements of a shape (1 for a scalar). Saturates at `usize::MAX` instead of
/// overflowing (exact whenever a dimension is 0): every node's shape passed
/// [`check_size`], so only shapes being validated can saturate, and a saturated count
/// never equals a real one.
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().fold(1usize, |acc, &d| acc.saturating_mul(d))
}

/// Bytes of an array of `shape` with `elem_size`-byte elements, or `None` when the
/// product of its non-zero dimensions times `elem_size` exceeds `isize::MAX` (NumPy's
/// "array is too big" rule: zero dimensions are skipped, so `[2^63, 0]` is refused even
/// though it holds nothing; no allocation or offset computation can overflow later).
pub fn byte_size(shape: &[usize], elem_size: usize) -> Option<usize> {
    let mut bytes = elem_size;
    let mut empty = false;
    for &d in shape {
        if d == 0 {
            empty = true;
        } else {
            bytes = bytes.checked_mul(d).filter(|&b| b <= isize::MAX as usize)?;
        }
    }
    Some(if empty { 0 } else { bytes })
}

/// [`byte_size`] as a check: `Err(Shape)` naming the shape when it is too large.
pub fn check_size(op: &'static str, shape: &[usize], dtype: crate::dtype::DType) -> Result<usize> {
    byte_size(shape, dtype.size()).ok_or_else(|| {
        Error::shape(
            op,
            format!("shape {shape:?} of {dtype} is too large: its size in bytes exceeds isize::MAX ({})", isize::MAX),
        )
    })
}

/// Splits `shape` around `axis` into (outer, axis length, inner) element counts: the
/// view every kernel that works along one axis takes.
pub fn split_axis(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (numel(&shape[..axis]), shape[axis], numel(&shape[axis + 1..]))
}

/// Row-major strides, in elements.
pub fn contiguous_strides(shape: &[usize]) -> Vec<isize> {
    let mut strides = vec![0isize; shape.len()];
    let mut acc = 1isize;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc *= d.max(1) as isize;
    }
    strides
}

/// Maps a possibly negative axis into `0..ndim`.
pub fn normalize_axis(op: &'static str, axis: isize, ndim: usize) -> Result<usize> {
    let n = ndim as isize;
    if axis < -n || axis >= n {
        return Err(Error::Axis { op, axis, ndim });
    }
    Ok(if axis < 0 { (axis + n) as usize } else { axis as usize })
}

/// Normalises a set of axes, rejecting duplicates. Returns them sorted.
pub fn normalize_axes(op: &'static str, axes: &[isize], ndim: usize) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let ax = normalize_axis(op, a, ndim)?;
        if out.contains(&ax) {
            return Err(Error::invalid(op, format!("axis {a} is repeated in {axes:?}")));
        }
        out.push(ax);
    }
    out.sort_unstable();
    Ok(out)
}

/// NumPy broadcasting of two shapes.
pub fn broadcast_shapes(op: &'static str, a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    broadcast_shape(op, a, b).map(|s| s.to_vec())
}

/// `a == b` for shapes, compared inline: a slice's `==` calls `memcmp`, whose call cost
/// more than comparing a few axes (three calls per op of the 1000-op chain, building and
/// planning: callgrind, session 21).
#[inline]
pub(crate) fn same(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// [`broadcast_shapes`] as a [`Shape`]: what a node's meta holds, made without a heap
/// allocation (each binary op's shape rule calls it).
pub(crate) fn broadcast_shape(op: &'static str, a: &[usize], b: &[usize]) -> Result<Shape> {
    if same(a, b) {
        return Ok(Shape::from_slice(a));
    }
    check_broadcast(op, a, b)?;
    // Aligned at the last axis; where one side is shorter or 1, the other's size.
    let n = a.len().max(b.len());
    let at = |s: &[usize], i: usize| if i + s.len() >= n { s[i + s.len() - n] } else { 1 };
    Ok((0..n).map(|i| if at(a, i) == 1 { at(b, i) } else { at(a, i) }).collect())
}

/// Checks that `a` and `b` broadcast together, without building the result: every binary
/// op checks its operands first, under its own name, and allocating the shape there cost
/// two allocations per op (callgrind on the 1000-op chain, session 16).
pub fn check_broadcast(op: &'static str, a: &[usize], b: &[usize]) -> Result<()> {
    if a.iter().rev().zip(b.iter().rev()).all(|(&x, &y)| x == y || x == 1 || y == 1) {
        Ok(())
    } else {
        Err(Error::shape(op, format!("shapes {a:?} and {b:?} cannot be broadcast together")))
    }
}

/// Strides (in elements) with which an input of shape `input`, stored contiguously,
/// is read as if broadcast to `out` (stride 0 on broadcast axes).
/// `out` must be a valid broadcast of `input`.
pub fn broadcast_strides(input: &[usize], out: &[usize]) -> Vec<isize> {
    let base = contiguous_strides(input);
    let lead = out.len() - input.len();
    (0..out.len()).map(|i| if i < lead || input[i - lead] == 1 && out[i] != 1 { 0 } else { base[i - lead] }).collect()
}

/// Merges axes that every stride set walks contiguously (and drops size-1 axes), so
/// strided kernels see the smallest rank. Returns the shape and one stride set per input.
/// Used by both backends' strided kernels and by [`crate::primitive::MatmulPlan`].
pub fn merge_axes(shape: &[usize], strides: &[Vec<isize>]) -> (Vec<usize>, Vec<Vec<isize>>) {
    let mut out_shape: Vec<usize> = Vec::new();
    let mut out_strides: Vec<Vec<isize>> = vec![Vec::new(); strides.len()];
    for (ax, &d) in shape.iter().enumerate() {
        if d == 1 {
            continue;
        }
        // Mergeable when, for every input, the previous kept axis steps over exactly this one.
        let mergeable = !out_shape.is_empty()
            && strides.iter().zip(&out_strides).all(|(s, o)| o.last().is_some_and(|&l| l == s[ax] * d as isize));
        if mergeable && let Some(last) = out_shape.last_mut() {
            *last *= d;
            for (o, s) in out_strides.iter_mut().zip(strides) {
                if let Some(l) = o.last_mut() {
                    *l = s[ax];
                }
            }
        } else {
            out_shape.push(d);
            for (o, s) in out_strides.iter_mut().zip(strides) {
                o.push(s[ax]);
            }
        }
    }
    (out_shape, out_strides)
}

/// Walks the element offsets of a strided view in row-major order of `shape`.
/// Used by kernels that read broadcast or strided inputs.
pub struct StridedIter<'a> {
    shape: &'a [usize],
    strides: &'a [isize],
    index: Vec<usize>,
    offset: isize,
    remaining: usize,
}

impl<'a> StridedIter<'a> {
    /// Starts at `offset` (in elements).
    pub fn new(shape: &'a [usize], strides: &'a [isize], offset: isize) -> Self {
        StridedIter { shape, strides, index: vec![0; shape.len()], offset, remaining: numel(shape) }
    }

    /// The same walk, started at row-major element `start` (for kernels that split the
    /// walk into chunks): skipping there costs one division per axis, not `start` steps.
    pub fn from_flat(shape: &'a [usize], strides: &'a [isize], offset: isize, start: usize) -> Self {
        let total = numel(shape);
        let start = start.min(total);
        let mut index = vec![0; shape.len()];
        let (mut rest, mut offset) = (start, offset);
        for ax in (0..shape.len()).rev() {
            if shape[ax] > 0 {
                index[ax] = rest % shape[ax];
                rest /= shape[ax];
                offset += strides[ax] * index[ax] as isize;
            }
        }
        StridedIter { shape, strides, index, offset, remaining: total - start }
    }
}

impl Iterator for StridedIter<'_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let cur = self.offset as usize;
        // Odometer increment from the last axis.
        for ax in (0..self.shape.len()).rev() {
            self.index[ax] += 1;
            self.offset += self.strides[ax];
            if self.index[ax] < self.shape[ax] {
                break;
            }
            self.offset -= self.strides[ax] * self.shape[ax] as isize;
            self.index[ax] = 0;
        }
        Some(cur)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_walk_starts_anywhere() {
        let (shape, strides) = ([2usize, 3, 4], [1isize, 0, 2]);
        let all: Vec<usize> = StridedIter::new(&shape, &strides, 3).collect();
        for start in 0..=24 {
            let tail: Vec<usize> = StridedIter::from_flat(&shape, &strides, 3, start).collect();
            assert_eq!(tail, all[start..], "start {start}");
        }
        assert_eq!(StridedIter::from_flat(&shape, &strides, 0, 99).count(), 0);
    }

    #[test]
    fn sizes_never_overflow() {
        assert_eq!(numel(&[1 << 40, 1 << 40]), usize::MAX);
        assert_eq!(numel(&[usize::MAX, usize::MAX, 0]), 0);
        assert_eq!(byte_size(&[2, 3], 4), Some(24));
        assert_eq!(byte_size(&[], 8), Some(8));
        assert_eq!(byte_size(&[5, 0], 4), Some(0));
        assert_eq!(byte_size(&[1 << 61, 4], 4), None);
        assert_eq!(byte_size(&[usize::MAX, 0], 1), None);
        assert_eq!(byte_size(&[1 << 33, 1 << 31], 1), None);
        assert_eq!(byte_size(&[isize::MAX as usize], 1), Some(isize::MAX as usize));
    }

    #[test]
    fn broadcasting() {
        assert_eq!(broadcast_shapes("t", &[3, 1], &[4]).unwrap(), vec![3, 4]);
        assert_eq!(broadcast_shapes("t", &[], &[2, 2]).unwrap(), vec![2, 2]);
        assert!(broadcast_shapes("t", &[3], &[4]).is_err());
        assert_eq!(broadcast_shapes("t", &[2, 1, 5], &[1, 4, 1]).unwrap(), vec![2, 4, 5]);
        assert_eq!(broadcast_shapes("t", &[0, 1], &[1, 3]).unwrap(), vec![0, 3]);
        assert_eq!(broadcast_shapes("t", &[1], &[0]).unwrap(), vec![0]);
        assert!(broadcast_shapes("t", &[0], &[3]).is_err());
        // The check alone agrees with the full computation.
        for (a, b) in [(&[3, 1][..], &[4][..]), (&[3], &[4]), (&[0], &[1]), (&[2, 3], &[5, 1, 3]), (&[], &[7])] {
            assert_eq!(check_broadcast("t", a, b).is_ok(), broadcast_shapes("t", a, b).is_ok(), "{a:?} {b:?}");
        }
        let e = check_broadcast("add", &[2, 3], &[4]).unwrap_err().to_string();
        assert!(e.contains("add") && e.contains("[2, 3] and [4]"), "{e}");
        assert_eq!(broadcast_strides(&[3, 1], &[2, 3, 4]), vec![0, 1, 0]);
    }

    #[test]
    fn merging_axes() {
        // A contiguous [2, 3, 4] against a broadcast row: the first two axes merge for both.
        let (shape, st) = merge_axes(&[2, 3, 4], &[vec![12, 4, 1], vec![0, 0, 1]]);
        assert_eq!(shape, vec![2 * 3, 4]);
        assert_eq!(st, vec![vec![4, 1], vec![0, 1]]);
        // Size-1 axes vanish; a transpose does not merge.
        let (shape, st) = merge_axes(&[1, 3, 2], &[vec![6, 1, 3]]);
        assert_eq!(shape, vec![3, 2]);
        assert_eq!(st, vec![vec![1, 3]]);
        assert_eq!(merge_axes(&[], &[vec![]]).0, Vec::<usize>::new());
    }

    #[test]
    fn strided_walk() {
        // Transpose of a 2x3 matrix.
        let offs: Vec<_> = StridedIter::new(&[3, 2], &[1, 3], 0).collect();
        assert_eq!(offs, vec![0, 3, 1, 4, 2, 5]);
        // Reversed vector.
        let offs: Vec<_> = StridedIter::new(&[3], &[-1], 2).collect();
        assert_eq!(offs, vec![2, 1, 0]);
    }
}
