//! Indexing ops: take, take_along_axis, scatter (lowered to `Gather` / `Scatter`), and
//! triangle masks (lowered to `Arange` comparisons and `Select`).
//!
//! Indices are `I32` or `U32` (`I64` is saturated into `I32`, so an index beyond
//! `i32`'s range is out of range like any other). Following the primitives,
//! negative indices count from the end, out-of-range reads clamp (NumPy's `mode="clip"`)
//! and out-of-range scatter updates are dropped. The data-dependent exceptions evaluate
//! what they depend on: [`Array::take_with_mode`] with [`IndexMode::Raise`] reads the
//! indices, [`Array::masked_select`] the mask.

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

/// What [`Array::take_with_mode`] does with an out-of-range index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum IndexMode {
    /// Clamp into the axis (NumPy's `mode="clip"`, what [`Array::take`] does); negative
    /// indices still count from the end.
    #[default]
    Clip,
    /// Return an error naming the first index outside `-n..n` (NumPy's default
    /// `mode="raise"`). Evaluates the indices to check them.
    Raise,
}

/// The values of an index array, read back (evaluates it).
fn index_values(op: &'static str, indices: &Array) -> Result<Vec<i64>> {
    match indices.dtype() {
        DType::I32 => Ok(indices.to_vec::<i32>()?.into_iter().map(i64::from).collect()),
        DType::U32 => Ok(indices.to_vec::<u32>()?.into_iter().map(i64::from).collect()),
        DType::I64 => indices.to_vec::<i64>(),
        DType::Bool | DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {
            Err(Error::dtype(op, indices.dtype(), "indices must be int32, uint32 or int64"))
        }
    }
}

impl Array {
    /// [`Array::take`] with a choice for out-of-range indices: [`IndexMode::Raise`]
    /// evaluates `indices` and returns `Err(Invalid)` for one outside `-n..n`.
    ///
    /// ```
    /// use lazuli::{Array, IndexMode};
    /// let a = Array::from_slice(&[10i32, 20, 30], &[3])?;
    /// let i = Array::from_slice(&[-1i32, 5], &[2])?;
    /// assert_eq!(a.take_with_mode(&i, None, IndexMode::Clip)?.to_vec::<i32>()?, vec![30, 30]);
    /// assert!(a.take_with_mode(&i, None, IndexMode::Raise).is_err());
    /// # Ok::<(), lazuli::Error>(())
    /// ```
    pub fn take_with_mode(&self, indices: &Array, axis: Option<isize>, mode: IndexMode) -> Result<Array> {
        if mode == IndexMode::Raise {
            let (n, ax) = match axis {
                None => (self.size(), 0),
                Some(a) => {
                    let ax = normalize_axis("take", a, self.ndim())?;
                    (self.shape()[ax], ax)
                }
            };
            let n = n as i64;
            if let Some(bad) = index_values("take", indices)?.into_iter().find(|&i| i < -n || i >= n) {
                return Err(Error::invalid(
                    "take",
                    format!("index {bad} is out of bounds for axis {ax} with size {n}"),
                ));
            }
        }
        self.take(indices, axis)
    }

    /// The elements where `mask` is true, in row-major order, as a 1-D array (NumPy's
    /// `a[mask]`, PyTorch's `masked_select`). `mask` is a bool array of this array's
    /// shape. The result's length depends on the mask's values, so the mask is
    /// evaluated and read back here.
    ///
    /// ```
    /// let a = lazuli::Array::from_slice(&[1.0f32, -2.0, 3.0, -4.0], &[2, 2])?;
    /// let m = a.gt(0.0)?;
    /// assert_eq!(a.masked_select(&m)?.to_vec::<f32>()?, vec![1.0, 3.0]);
    /// # Ok::<(), lazuli::Error>(())
    /// ```
    pub fn masked_select(&self, mask: &Array) -> Result<Array> {
        if mask.dtype() != DType::Bool {
            return Err(Error::dtype(
                "masked_select",
                mask.dtype(),
                "the mask must be bool (compare first, e.g. a.gt(0.0))",
            ));
        }
        if mask.shape() != self.shape() {
            return Err(Error::shape(
                "masked_select",
                format!("mask of shape {:?} does not match the array's shape {:?}", mask.shape(), self.shape()),
            ));
        }
        if self.size() > u32::MAX as usize {
            return Err(Error::invalid(
                "masked_select",
                format!("arrays above 2^32 elements are not supported, shape {:?}", self.shape()),
            ));
        }
        let picked: Vec<u32> =
            mask.to_vec::<bool>()?.iter().enumerate().filter(|&(_, &m)| m).map(|(i, _)| i as u32).collect();
        self.flatten()?.take(&Array::from_slice(&picked, &[picked.len()])?, Some(0))
    }

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
        let gathered = Array::from_op(Gather { axis: ax }, [src, idx])?;
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
        Array::from_op(Gather { axis: ax }, [src, idx])
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
        Array::from_op(Scatter { axis: ax, mode }, [self.clone(), idx, upd])
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
        let rows = Array::from_op(Arange { start: k as f64, step: 1.0, shape: vec![m, 1], dtype: DType::I32 }, [])?;
        let cols = Array::from_op(Arange { start: 0.0, step: 1.0, shape: vec![1, n], dtype: DType::I32 }, [])?;
        let keep = Array::from_op(Binary { op: cmp }, [cols, rows])?;
        let zero = Array::from_op(Full { value: 0.0, shape: vec![], dtype: self.dtype() }, [])?;
        Array::from_op(Select, [keep, self.clone(), zero])
    }
}
