//! Arrays made from nothing: constants (`Full`), ranges (`Arange`), and composites
//! lowered to them (`linspace`, `eye`). No data is uploaded.

use crate::array::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::binary::check_fits;
use crate::primitive::{Arange, Concatenate, Full};
use crate::shape::check_size;

/// An array of `shape` with every element `value` (cast to `dtype`; for integer
/// dtypes `value` is truncated and must be finite and in range).
///
/// ```
/// let a = lazuli::full(&[2], 1.5, lazuli::DType::F32)?;
/// assert_eq!(a.to_vec::<f32>()?, vec![1.5, 1.5]);
/// # Ok::<(), lazuli::Error>(())
/// ```
pub fn full(shape: &[usize], value: f64, dtype: DType) -> Result<Array> {
    check_size("full", shape, dtype)?;
    check_fits("full", value, dtype)?;
    Array::from_op(Full { value, shape: shape.to_vec(), dtype }, [])
}

/// An array of `shape` filled with 0.
pub fn zeros(shape: &[usize], dtype: DType) -> Result<Array> {
    full(shape, 0.0, dtype)
}

/// An array of `shape` filled with 1.
pub fn ones(shape: &[usize], dtype: DType) -> Result<Array> {
    full(shape, 1.0, dtype)
}

/// `start, start + step, ...` up to but excluding `stop`: `ceil((stop - start) / step)`
/// elements (none if that is negative), computed in `f64` and cast to `dtype`.
/// Errors on a zero or non-finite argument, on bool, and on integer dtypes that cannot
/// hold the values.
///
/// ```
/// let a = lazuli::arange(0.0, 5.0, 2.0, lazuli::DType::I32)?;
/// assert_eq!(a.to_vec::<i32>()?, vec![0, 2, 4]);
/// # Ok::<(), lazuli::Error>(())
/// ```
pub fn arange(start: f64, stop: f64, step: f64, dtype: DType) -> Result<Array> {
    if !(start.is_finite() && stop.is_finite() && step.is_finite()) {
        return Err(Error::invalid("arange", format!("arguments must be finite: {start}, {stop}, {step}")));
    }
    if step == 0.0 {
        return Err(Error::invalid("arange", "step must not be 0"));
    }
    if dtype == DType::Bool {
        return Err(Error::dtype("arange", dtype, "ranges need a numeric dtype"));
    }
    let len = ((stop - start) / step).ceil().max(0.0);
    if len >= isize::MAX as f64 {
        return Err(Error::invalid("arange", format!("{len} elements are too many")));
    }
    let len = len as usize;
    check_size("arange", &[len], dtype)?;
    if len > 0 {
        check_fits("arange", start, dtype)?;
        check_fits("arange", start + (len - 1) as f64 * step, dtype)?;
    }
    Array::from_op(Arange { start, step, shape: vec![len], dtype }, [])
}

/// `num` evenly spaced values from `start` to `stop`, both included; the last is exactly
/// `stop` (as NumPy). Computed in `f64`, then cast to `dtype`.
///
/// ```
/// let a = lazuli::linspace(0.0, 1.0, 5, lazuli::DType::F32)?;
/// assert_eq!(a.to_vec::<f32>()?, vec![0.0, 0.25, 0.5, 0.75, 1.0]);
/// # Ok::<(), lazuli::Error>(())
/// ```
pub fn linspace(start: f64, stop: f64, num: usize, dtype: DType) -> Result<Array> {
    if !(start.is_finite() && stop.is_finite()) {
        return Err(Error::invalid("linspace", format!("start and stop must be finite: {start}, {stop}")));
    }
    check_size("linspace", &[num], dtype)?;
    check_fits("linspace", start, dtype)?;
    check_fits("linspace", stop, dtype)?;
    if num <= 1 {
        return Array::from_op(Full { value: start, shape: vec![num], dtype }, []);
    }
    // The last value is set to `stop` exactly instead of trusting start + (n-1) * step.
    let step = (stop - start) / (num - 1) as f64;
    let head = Array::from_op(Arange { start, step, shape: vec![num - 1], dtype }, [])?;
    let last = Array::from_op(Full { value: stop, shape: vec![1], dtype }, [])?;
    Array::from_op(Concatenate { axis: 0 }, [head, last])
}

/// An `n x m` matrix (`m` defaults to `n`) with ones on diagonal `k` (0 the main one,
/// positive above, negative below) and zeros elsewhere.
///
/// ```
/// let a = lazuli::eye(2, Some(3), 1, lazuli::DType::I32)?;
/// assert_eq!(a.to_vec::<i32>()?, vec![0, 1, 0, 0, 0, 1]);
/// # Ok::<(), lazuli::Error>(())
/// ```
pub fn eye(n: usize, m: Option<usize>, k: isize, dtype: DType) -> Result<Array> {
    let m = m.unwrap_or(n);
    check_size("eye", &[n, m], dtype)?;
    let (ni, mi) = (n as i64, m as i64);
    // Off the matrix (or empty): no diagonal element exists.
    if n == 0 || m == 0 || k as i64 >= mi || (k as i64) <= -ni {
        return zeros(&[n, m], dtype);
    }
    if n > i32::MAX as usize || m > i32::MAX as usize {
        return Err(Error::invalid("eye", format!("{n} x {m} is too large")));
    }
    // Row index + k as a column ([n, 1]) against column indices ([1, m]).
    let rows = Array::from_op(Arange { start: k as f64, step: 1.0, shape: vec![n, 1], dtype: DType::I32 }, [])?;
    let cols = Array::from_op(Arange { start: 0.0, step: 1.0, shape: vec![1, m], dtype: DType::I32 }, [])?;
    rows.eq(&cols)?.astype(dtype)
}

impl Array {
    /// Zeros with this array's shape and dtype.
    pub fn zeros_like(&self) -> Result<Array> {
        zeros(self.shape(), self.dtype())
    }

    /// Ones with this array's shape and dtype.
    pub fn ones_like(&self) -> Result<Array> {
        ones(self.shape(), self.dtype())
    }

    /// `value` everywhere, with this array's shape and dtype.
    pub fn full_like(&self, value: f64) -> Result<Array> {
        full(self.shape(), value, self.dtype())
    }
}
