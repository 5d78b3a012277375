//! Conversions between [`Array`] and `ndarray` (the `ndarray` feature).
//!
//! Into lazuli: an owned `ndarray::Array` in standard (row-major, contiguous) layout
//! hands over its vector without a copy ([`Array::from_vec`]); a view or another layout
//! is copied once, in logical order. Out of lazuli: the array is evaluated and its data
//! copied once into an `ArrayD` (lazuli's buffers may live on a GPU and are immutable).

use ndarray::{ArrayBase, ArrayD, ArrayView, Data, Dimension, IxDyn};

use crate::array::Array;
use crate::dtype::Element;
use crate::error::{Error, Result};

/// Copies `a` in logical (row-major) order: the one layout lazuli takes.
fn copy_of<S: Data<Elem = T>, T: Element, D: Dimension>(a: &ArrayBase<S, D>) -> Result<Array> {
    match a.as_slice() {
        Some(s) => Array::from_host_vec("from ndarray", s.to_vec(), a.shape()),
        None => Array::from_host_vec("from ndarray", a.iter().copied().collect(), a.shape()),
    }
}

/// Takes the vector of a standard-layout array without a copy; copies any other layout.
impl<T: Element, D: Dimension> TryFrom<ndarray::Array<T, D>> for Array {
    type Error = Error;
    fn try_from(a: ndarray::Array<T, D>) -> Result<Array> {
        if !a.is_standard_layout() {
            return copy_of(&a);
        }
        let shape = a.shape().to_vec();
        let len = a.len();
        let (v, offset) = a.into_raw_vec_and_offset();
        // Standard layout: the elements are consecutive from `offset`. An array sliced in
        // place still holds the cut elements around them, so only then is there a copy.
        let start = offset.unwrap_or(0);
        if start == 0 && v.len() == len {
            Array::from_host_vec("from ndarray", v, &shape)
        } else {
            Array::from_host_vec("from ndarray", v[start..start + len].to_vec(), &shape)
        }
    }
}

/// Copies the viewed elements once, in logical order.
impl<T: Element, D: Dimension> TryFrom<ArrayView<'_, T, D>> for Array {
    type Error = Error;
    fn try_from(a: ArrayView<'_, T, D>) -> Result<Array> {
        copy_of(&a)
    }
}

/// Copies the array once, as for a view.
impl<T: Element, D: Dimension> TryFrom<&ndarray::Array<T, D>> for Array {
    type Error = Error;
    fn try_from(a: &ndarray::Array<T, D>) -> Result<Array> {
        copy_of(a)
    }
}

/// Evaluates `a` and copies its data out; `Err(Error::DType)` unless `T` is its dtype
/// (convert with [`Array::astype`] first), or the evaluation's own error.
impl<T: Element> TryFrom<&Array> for ArrayD<T> {
    type Error = Error;
    fn try_from(a: &Array) -> Result<ArrayD<T>> {
        ArrayD::from_shape_vec(IxDyn(a.shape()), a.to_vec::<T>()?)
            .map_err(|e| Error::Internal(format!("to ndarray: shape {:?}: {e}", a.shape())))
    }
}

/// As for `&Array`.
impl<T: Element> TryFrom<Array> for ArrayD<T> {
    type Error = Error;
    fn try_from(a: Array) -> Result<ArrayD<T>> {
        ArrayD::try_from(&a)
    }
}
