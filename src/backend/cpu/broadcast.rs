//! The loop driver of the elementwise kernels: splits an output into chunks (on threads
//! above [`super::PAR_MIN`] elements) and, for broadcast inputs, into runs along the
//! innermost merged axis, where every input is either contiguous or one repeated value.
//! Kernels then see only slices and scalars, never per-element index arithmetic.

use rayon::prelude::*;

use super::PAR_MIN;
use crate::error::Result;
use crate::shape::{broadcast_strides, merge_axes, numel};

/// Elements per thread task: large enough that a task's overhead (a few µs) is noise,
/// small enough that two cores share a 1M-element op evenly.
const TASK: usize = 1 << 16;

/// Runs `f(start, chunk)` over `out` in consecutive chunks; on threads when `out` is at
/// least [`PAR_MIN`] long. `start` is the chunk's offset in `out`.
pub(crate) fn par_fill<U: Send>(out: &mut [U], f: impl Fn(usize, &mut [U]) -> Result<()> + Sync) -> Result<()> {
    if out.len() < PAR_MIN {
        return f(0, out);
    }
    out.par_chunks_mut(TASK).enumerate().try_for_each(|(i, o)| f(i * TASK, o))
}

/// One input's place in a run: its element offset and whether it advances with the
/// output (`true`, contiguous) or repeats one value (`false`, broadcast).
pub(crate) type Run = (usize, bool);

/// How `N` inputs of shapes `ins`, broadcast to `out`, are read: the merged shape and,
/// per input, its strides over it (the last 0 or 1).
pub(crate) struct Layout<const N: usize> {
    shape: Vec<usize>,
    strides: [Vec<isize>; N],
}

impl<const N: usize> Layout<N> {
    /// The layout of contiguous inputs of shapes `ins` broadcast to `out`.
    pub(crate) fn new(ins: [&[usize]; N], out: &[usize]) -> Self {
        let st: Vec<Vec<isize>> = ins.iter().map(|s| broadcast_strides(s, out)).collect();
        let (shape, merged) = merge_axes(out, &st);
        let mut it = merged.into_iter();
        Layout { shape, strides: std::array::from_fn(|_| it.next().unwrap_or_default()) }
    }

    /// Calls `f(runs, chunk)` for consecutive runs covering `out[start..start + len]`
    /// (`len = chunk.len()`), each within one row of the innermost axis.
    pub(crate) fn for_runs<U>(
        &self,
        start: usize,
        chunk: &mut [U],
        mut f: impl FnMut([Run; N], &mut [U]) -> Result<()>,
    ) -> Result<()> {
        let Some((&inner, outer)) = self.shape.split_last() else {
            // Rank 0 after merging: one element, every input at offset 0.
            return f([(0, false); N], chunk);
        };
        let (mut row, mut col) = (start / inner, start % inner);
        let mut rest = chunk;
        while !rest.is_empty() {
            let m = (inner - col).min(rest.len());
            let (head, tail) = rest.split_at_mut(m);
            let runs: [Run; N] = std::array::from_fn(|k| {
                let s = &self.strides[k];
                let step = s[outer.len()];
                let base = row_offset(row, outer, &s[..outer.len()]);
                ((base + step * col as isize) as usize, step != 0)
            });
            f(runs, head)?;
            rest = tail;
            col = 0;
            row += 1;
        }
        Ok(())
    }

    /// Number of elements.
    pub(crate) fn numel(&self) -> usize {
        numel(&self.shape)
    }
}

/// Offset of row `row` (row-major over `dims`) with `strides`.
fn row_offset(mut row: usize, dims: &[usize], strides: &[isize]) -> isize {
    let mut off = 0;
    for (&d, &s) in dims.iter().zip(strides).rev() {
        off += (row % d) as isize * s;
        row /= d;
    }
    off
}
