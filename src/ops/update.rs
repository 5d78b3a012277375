//! Functional updates, as JAX's `x.at[idx].set(v)` and MLX's: `a.at(idx).set(&v)`
//! returns a new array and leaves `a` as it was. Built on `scatter`, `scatter_add` and
//! `take` over the flat positions the index selects.

use crate::array::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::binary::Operand;
use crate::ops::creation::arange;
use crate::ops::slice_arg::SliceArg;

/// What [`Array::at`] selects.
#[derive(Debug, Clone)]
pub enum AtIndex {
    /// Basic indexing, as [`Array::slice`] takes it (what [`s!`](crate::s) builds).
    Slices(Vec<SliceArg>),
    /// Integer positions along the first axis (NumPy's `a[idx]` with an integer array):
    /// the selection has shape `idx.shape + a.shape[1..]`. Negative positions count
    /// from the end; out-of-range updates are dropped (JAX's default).
    Indices(Array),
}

impl From<Vec<SliceArg>> for AtIndex {
    fn from(v: Vec<SliceArg>) -> Self {
        AtIndex::Slices(v)
    }
}
impl From<&[SliceArg]> for AtIndex {
    fn from(v: &[SliceArg]) -> Self {
        AtIndex::Slices(v.to_vec())
    }
}
impl From<&Array> for AtIndex {
    fn from(a: &Array) -> Self {
        AtIndex::Indices(a.clone())
    }
}
impl From<Array> for AtIndex {
    fn from(a: Array) -> Self {
        AtIndex::Indices(a)
    }
}

/// A pending functional update of part of an array; see [`Array::at`].
#[derive(Debug, Clone)]
pub struct At<'a> {
    array: &'a Array,
    index: AtIndex,
}

/// How the selected elements change.
#[derive(Clone, Copy)]
enum Update {
    Set,
    Add,
    Mul,
}

impl Array {
    /// The part of this array that `index` selects, for a functional update:
    /// `a.at(s![1.., 0]).set(&v)` is a copy of `a` with `a[1:, 0] = v`.
    ///
    /// ```
    /// use lazuli::{Array, s};
    /// let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    /// let b = a.at(s![.., 1]).set(0.0)?;
    /// assert_eq!(b.to_vec::<f32>()?, vec![1.0, 0.0, 3.0, 0.0]);
    /// let idx = Array::from_slice(&[0i32, 0], &[2])?;
    /// let c = a.at(&idx).add(1.0)?; // repeated positions accumulate
    /// assert_eq!(c.to_vec::<f32>()?, vec![3.0, 4.0, 3.0, 4.0]);
    /// # Ok::<(), lazuli::Error>(())
    /// ```
    pub fn at(&self, index: impl Into<AtIndex>) -> At<'_> {
        At { array: self, index: index.into() }
    }
}

impl At<'_> {
    /// A copy with the selected elements replaced by `values` (broadcast to the
    /// selection, cast to the array's dtype). Where integer positions repeat, which
    /// value wins is unspecified (as in JAX).
    pub fn set(&self, values: impl Into<Operand>) -> Result<Array> {
        self.apply("at.set", values.into(), Update::Set)
    }

    /// A copy with `values` added to the selected elements; repeated integer positions
    /// accumulate.
    pub fn add(&self, values: impl Into<Operand>) -> Result<Array> {
        self.apply("at.add", values.into(), Update::Add)
    }

    /// A copy with the selected elements multiplied by `values`. Where integer positions
    /// repeat, one of the products is kept (unlike JAX, which multiplies them all).
    pub fn mul(&self, values: impl Into<Operand>) -> Result<Array> {
        self.apply("at.mul", values.into(), Update::Mul)
    }

    /// The selected elements (`a[idx]`), as a new array.
    pub fn get(&self) -> Result<Array> {
        match &self.index {
            AtIndex::Slices(args) => self.array.slice(args),
            AtIndex::Indices(idx) => {
                first_axis("at.get", self.array)?;
                self.array.take(idx, Some(0))
            }
        }
    }

    fn apply(&self, op: &'static str, values: Operand, update: Update) -> Result<Array> {
        let a = self.array;
        let values = values.to_array(op, a.dtype())?;
        let (target, positions, axis) = match &self.index {
            AtIndex::Slices(args) => {
                // The flat position of every selected element, laid out as the selection.
                if a.size() > u32::MAX as usize {
                    return Err(Error::invalid(
                        op,
                        format!("slice updates index at most 2^32 elements, shape {:?} has more", a.shape()),
                    ));
                }
                let flat = arange(0.0, a.size() as f64, 1.0, DType::U32)?;
                let selected = flat.reshape_to(a.shape().to_vec())?.slice(args)?;
                let pos = selected.flatten()?;
                let values = broadcast(op, &values, selected.shape())?.flatten()?;
                (a.flatten()?, (pos, values), 0)
            }
            AtIndex::Indices(idx) => {
                first_axis(op, a)?;
                let rest = &a.shape()[1..];
                let mut sel = idx.shape().to_vec();
                sel.extend_from_slice(rest);
                let mut rows = vec![idx.size()];
                rows.extend_from_slice(rest);
                let values = broadcast(op, &values, &sel)?.reshape_to(rows.clone())?;
                // Scatter wants one index per updated element: each position repeated
                // over the remaining axes.
                let mut column = vec![idx.size()];
                column.extend(std::iter::repeat_n(1, rest.len()));
                let pos = idx.reshape_to(column)?.broadcast_to(&rows)?;
                (a.clone(), (pos, values), 0)
            }
        };
        let (pos, values) = positions;
        let out = match update {
            Update::Set => target.scatter(&pos, &values, axis)?,
            Update::Add => target.scatter_add(&pos, &values, axis)?,
            Update::Mul => {
                let current = target.take_along_axis(&pos, axis)?;
                target.scatter(&pos, &current.mul(&values)?, axis)?
            }
        };
        out.reshape_to(a.shape().to_vec())
    }
}

/// Integer positions index the first axis, which a 0-d array does not have.
fn first_axis(op: &'static str, a: &Array) -> Result<()> {
    if a.ndim() == 0 {
        return Err(Error::shape(op, "integer positions need an array of at least 1 dimension, got a 0-d array"));
    }
    Ok(())
}

/// `values` broadcast to the selection's shape, or an error naming both.
fn broadcast(op: &'static str, values: &Array, selection: &[usize]) -> Result<Array> {
    values.broadcast_to(selection).map_err(|_| {
        Error::shape(
            op,
            format!("values of shape {:?} do not broadcast to the selection {selection:?}", values.shape()),
        )
    })
}
