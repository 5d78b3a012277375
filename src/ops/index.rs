//! Indexing ops: take, take_along_axis, scatter (lowered to `Gather` / `Scatter`), and
//! triangle masks (lowered to `Arange` comparisons and `Select`).
//!
//! Indices are `I32` or `U32` (`I64` is saturated into `I32`, so an index beyond
//! `i32`'s range is out of range like any other). Following the primitives,
//! negative indices count from the end, out-of-range reads clamp (NumPy's `mode="clip"`)
//! and out-of-range scatter updates are dropped: no data-dependent error exists.

use crate::array::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::primitive::{Arange, Binary, BinaryOp, Full, Gather, Scatter, ScatterMode, Select};
use crate::shape::{broadcast_shapes, normalize_axis, numel};

/// Indices in a dtype the primitives take.
fn index_array(op: &'static str, indices: &Array) -> Result<Array> {
    match indices.dtype() {
        DType::I32 | DType::U32 => Ok(indices.clone()),
        // Saturated into int32 first: a plain cast wraps, so 2^32 + 1 would read index 1
        // instead of clamping (or dropping, for scatter) like any out-of-range index.
        DType::I64 => indices.clip(Some(i32::MIN as f64), Some(i32::MAX as f64))?.astype(DType::I32),
        DType::Bool | DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {
            Err(Error::dtype(op, indices.dtype(), "indices must be int32, uint32 or int64"))
        }
    }
}

/// A read of a zero-length axis has nothing to clamp into.
fn check_nonempty_axis(op: &'static str, src: &[usize], axis: usize, n_indices: usize) -> Result<()> {
    if src[axis] == 0 && n_indices > 0 {
        return Err(Error::shape(op, format!("cannot take from empty axis {axis} of shape {src:?}")));
    }
    Ok(())
}

impl Array {
    /// Elements at `indices` along `axis` (NumPy's `take`): the output shape is
    /// `shape[..axis] + indices.shape + shape[axis+1..]`. With `None`, takes from the
    /// flattened array.
    pub fn take(&self, indices: &Array, axis: Option<isize>) -> Result<Array> {
        let idx = index_array("take", indices)?;
        let (src, ax) = match axis {
            None => (self.flatten()?, 0),
            Some(a) => (self.clone(), normalize_axis("take", a, self.ndim())?),
        };
        let sh = src.shape().to_vec();
        check_nonempty_axis("take", &sh, ax, idx.size())?;
        // Gather wants indices of src's rank: [1.., m, 1..] broadcast to src's shape.
        let m = idx.size();
        let mut one_axis = vec![1; sh.len()];
        one_axis[ax] = m;
        let mut full = sh.clone();
        full[ax] = m;
        let idx = idx.reshape_to(one_axis)?.broadcast_to(&full)?;
        let gathered = Array::from_op(Gather { axis: ax }, vec![src, idx])?;
        let mut out = sh[..ax].to_vec();
        out.extend_from_slice(indices.shape());
        out.extend_from_slice(&sh[ax + 1..]);
        gathered.reshape_to(out)
    }

    /// `out[i] = self[i with i[axis] = indices[i]]` (NumPy's `take_along_axis`):
    /// `indices` has this array's rank; other axes broadcast.
    pub fn take_along_axis(&self, indices: &Array, axis: isize) -> Result<Array> {
        let idx = index_array("take_along_axis", indices)?;
        let ax = normalize_axis("take_along_axis", axis, self.ndim())?;
        if idx.ndim() != self.ndim() {
            return Err(Error::shape(
                "take_along_axis",
                format!("indices of shape {:?} must have the rank of shape {:?}", idx.shape(), self.shape()),
            ));
        }
        let (mut src_shape, mut idx_shape) = (Vec::new(), Vec::new());
        for (d, (&s, &i)) in self.shape().iter().zip(idx.shape()).enumerate() {
            let b = match (s, i) {
                _ if d == ax => {
                    src_shape.push(s);
                    idx_shape.push(i);
                    continue;
                }
                (s, i) if s == i => s,
                (1, i) => i,
                (s, 1) => s,
                _ => {
                    return Err(Error::shape(
                        "take_along_axis",
                        format!(
                            "indices of shape {:?} do not broadcast against shape {:?} outside axis {axis}",
                            idx.shape(),
                            self.shape()
                        ),
                    ));
                }
            };
            src_shape.push(b);
            idx_shape.push(b);
        }
        check_nonempty_axis("take_along_axis", self.shape(), ax, numel(&idx_shape))?;
        let src = self.broadcast_to(&src_shape)?;
        let idx = idx.broadcast_to(&idx_shape)?;
        Array::from_op(Gather { axis: ax }, vec![src, idx])
    }

    /// A copy with `out[i with i[axis] = indices[i]] = updates[i]` (PyTorch's
    /// `scatter` along a dim). `indices` has this array's shape except along `axis`;
    /// `updates` broadcasts to `indices`' shape and is cast to this dtype. Where indices
    /// repeat, which update wins is unspecified.
    pub fn scatter(&self, indices: &Array, updates: &Array, axis: isize) -> Result<Array> {
        self.scatter_impl("scatter", indices, updates, axis, ScatterMode::Assign)
    }

    /// Like [`Array::scatter`], but updates add into the array; repeated indices
    /// accumulate (PyTorch's `scatter_add`).
    pub fn scatter_add(&self, indices: &Array, updates: &Array, axis: isize) -> Result<Array> {
        self.scatter_impl("scatter_add", indices, updates, axis, ScatterMode::Add)
    }

    fn scatter_impl(
        &self,
        op: &'static str,
        indices: &Array,
        updates: &Array,
        axis: isize,
        mode: ScatterMode,
    ) -> Result<Array> {
        let idx = index_array(op, indices)?;
        let ax = normalize_axis(op, axis, self.ndim())?;
        let fits = idx.ndim() == self.ndim() && (0..self.ndim()).all(|d| d == ax || idx.shape()[d] == self.shape()[d]);
        if !fits {
            return Err(Error::shape(
                op,
                format!(
                    "indices of shape {:?} must match shape {:?} except along axis {axis}",
                    idx.shape(),
                    self.shape()
                ),
            ));
        }
        if broadcast_shapes(op, updates.shape(), idx.shape()).ok().as_deref() != Some(idx.shape()) {
            return Err(Error::shape(
                op,
                format!(
                    "updates of shape {:?} do not broadcast to indices of shape {:?}",
                    updates.shape(),
                    idx.shape()
                ),
            ));
        }
        if idx.size() == 0 {
            return Ok(self.clone());
        }
        let upd = updates.broadcast_to(idx.shape())?.astype(self.dtype())?;
        Array::from_op(Scatter { axis: ax, mode }, vec![self.clone(), idx, upd])
    }

    /// The upper triangle of the last two axes: elements with `col - row >= k` are kept,
    /// the rest set to zero. A 1-D array of length `n` is taken as every row of an
    /// `n x n` matrix, giving `[n, n]` (as NumPy).
    pub fn triu(&self, k: isize) -> Result<Array> {
        self.triangle("triu", k, BinaryOp::Ge)
    }

    /// The lower triangle of the last two axes: elements with `col - row <= k` are kept,
    /// the rest set to zero. A 1-D array gives `[n, n]` as in [`Array::triu`].
    pub fn tril(&self, k: isize) -> Result<Array> {
        self.triangle("tril", k, BinaryOp::Le)
    }

    /// Keeps elements where `cmp(col, row + k)` holds.
    fn triangle(&self, op: &'static str, k: isize, cmp: BinaryOp) -> Result<Array> {
        let (m, n) = match self.shape() {
            [] => return Err(Error::shape(op, "needs at least 1 dimension, got a 0-d array")),
            // NumPy masks an n x n triangle and broadcasts the row against it.
            &[n] => (n, n),
            [.., m, n] => (*m, *n),
        };
        // I32 arithmetic saturates a huge k, which still keeps all or nothing.
        let rows = Array::from_op(Arange { start: k as f64, step: 1.0, shape: vec![m, 1], dtype: DType::I32 }, vec![])?;
        let cols = Array::from_op(Arange { start: 0.0, step: 1.0, shape: vec![1, n], dtype: DType::I32 }, vec![])?;
        let keep = Array::from_op(Binary { op: cmp }, vec![cols, rows])?;
        let zero = Array::from_op(Full { value: 0.0, shape: vec![], dtype: self.dtype() }, vec![])?;
        Array::from_op(Select, vec![keep, self.clone(), zero])
    }
}
