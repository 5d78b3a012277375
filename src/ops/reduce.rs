//! Reductions (`Reduce`, `ArgReduce`), scans (`Scan`) and composites lowered to them
//! (mean, var, std, logsumexp, softmax).
//!
//! Axes are `&[isize]`; an empty slice means every axis. Reductions over no elements
//! give the identity (sum 0, prod 1, all true, any false, logsumexp -inf, mean NaN)
//! without running a kernel; max, min, argmax and argmin over no elements are errors
//! (NumPy: "zero-size array to reduction operation").

use crate::array::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::primitive::{ArgReduce, ArgReduceOp, Reduce, ReduceOp, Scan, ScanOp};
use crate::shape::{normalize_axes, normalize_axis};

use super::binary::where_;
use super::creation::full;

/// A reduction's normalised axes and shapes.
struct Plan {
    axes: Vec<usize>,
    /// Shape the caller asked for (`kept` or with the reduced axes removed).
    out: Vec<usize>,
    /// Number of elements folded into each output element.
    count: usize,
}

fn plan(op: &'static str, shape: &[usize], axes: &[isize], keepdims: bool) -> Result<Plan> {
    let axes = if axes.is_empty() { (0..shape.len()).collect() } else { normalize_axes(op, axes, shape.len())? };
    let mut kept = shape.to_vec();
    let mut count = 1usize;
    for &a in &axes {
        count *= shape[a];
        kept[a] = 1;
    }
    let out = if keepdims {
        kept
    } else {
        shape.iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, &d)| d).collect()
    };
    Ok(Plan { axes, out, count })
}

impl Array {
    /// `Reduce` of `self` (already in the right dtype) as the plan says.
    fn reduce_with(&self, op: ReduceOp, p: &Plan) -> Result<Array> {
        if p.axes.is_empty() {
            return self.reshape_to(p.out.clone());
        }
        let r = Array::from_op(Reduce { op, axes: p.axes.clone() }, vec![self.clone()])?;
        r.reshape_to(p.out.clone())
    }

    /// A reduction with an identity for empty input.
    fn reduce_or(&self, name: &'static str, op: ReduceOp, axes: &[isize], keepdims: bool, empty: f64) -> Result<Array> {
        let p = plan(name, self.shape(), axes, keepdims)?;
        if p.count == 0 {
            return full(&p.out, empty, self.dtype());
        }
        self.reduce_with(op, &p)
    }

    /// A reduction that has no identity: errors on empty input.
    fn reduce_nonempty(&self, name: &'static str, op: ReduceOp, axes: &[isize], keepdims: bool) -> Result<Array> {
        let p = plan(name, self.shape(), axes, keepdims)?;
        if p.count == 0 {
            return Err(Error::shape(
                name,
                format!("reduction over axes {axes:?} of shape {:?} has no elements and no identity", self.shape()),
            ));
        }
        self.reduce_with(op, &p)
    }

    /// Bool is summed and multiplied as `I32`; other dtypes keep theirs.
    fn bool_to_i32(&self) -> Result<Array> {
        if self.dtype() == DType::Bool { self.astype(DType::I32) } else { Ok(self.clone()) }
    }

    fn to_float(&self) -> Result<Array> {
        self.astype(self.dtype().to_float())
    }

    /// Sum over `axes` (empty: all). Bool sums as `I32`; integers keep their dtype.
    ///
    /// ```
    /// let a = lazuli::Array::from_slice(&[1i32, 2, 3, 4], &[2, 2])?;
    /// assert_eq!(a.sum(&[0], false)?.to_vec::<i32>()?, vec![4, 6]);
    /// # Ok::<(), lazuli::Error>(())
    /// ```
    pub fn sum(&self, axes: &[isize], keepdims: bool) -> Result<Array> {
        self.bool_to_i32()?.reduce_or("sum", ReduceOp::Sum, axes, keepdims, 0.0)
    }

    /// Product over `axes` (empty: all). Bool multiplies as `I32`.
    pub fn prod(&self, axes: &[isize], keepdims: bool) -> Result<Array> {
        self.bool_to_i32()?.reduce_or("prod", ReduceOp::Prod, axes, keepdims, 1.0)
    }

    /// Maximum over `axes` (empty: all). Errors when there are no elements to reduce.
    pub fn max(&self, axes: &[isize], keepdims: bool) -> Result<Array> {
        self.reduce_nonempty("max", ReduceOp::Max, axes, keepdims)
    }

    /// Minimum over `axes` (empty: all). Errors when there are no elements to reduce.
    pub fn min(&self, axes: &[isize], keepdims: bool) -> Result<Array> {
        self.reduce_nonempty("min", ReduceOp::Min, axes, keepdims)
    }

    /// True where every element over `axes` is non-zero (true for no elements).
    pub fn all(&self, axes: &[isize], keepdims: bool) -> Result<Array> {
        self.astype(DType::Bool)?.reduce_or("all", ReduceOp::Min, axes, keepdims, 1.0)
    }

    /// True where any element over `axes` is non-zero (false for no elements).
    pub fn any(&self, axes: &[isize], keepdims: bool) -> Result<Array> {
        self.astype(DType::Bool)?.reduce_or("any", ReduceOp::Max, axes, keepdims, 0.0)
    }

    /// Mean over `axes` (empty: all). Float-valued; NaN for no elements.
    pub fn mean(&self, axes: &[isize], keepdims: bool) -> Result<Array> {
        let p = plan("mean", self.shape(), axes, keepdims)?;
        let x = self.to_float()?;
        if p.count == 0 {
            return full(&p.out, f64::NAN, x.dtype());
        }
        x.reduce_with(ReduceOp::Sum, &p)?.div(p.count as f64)
    }

    /// Variance over `axes` (empty: all) with `ddof` delta degrees of freedom:
    /// `sum((x - mean)^2) / (n - ddof)`. Float-valued; inf or NaN when `n <= ddof`
    /// (NumPy warns and gives the same).
    pub fn var(&self, axes: &[isize], keepdims: bool, ddof: usize) -> Result<Array> {
        let p = plan("var", self.shape(), axes, keepdims)?;
        let x = self.to_float()?;
        if p.count == 0 {
            return full(&p.out, f64::NAN, x.dtype());
        }
        let mean = x.mean(axes, true)?;
        let dev = x.sub(&mean)?.square()?;
        let denom = p.count.saturating_sub(ddof) as f64;
        dev.reduce_with(ReduceOp::Sum, &p)?.div(denom)
    }

    /// Standard deviation: `sqrt(var(axes, keepdims, ddof))`.
    pub fn std(&self, axes: &[isize], keepdims: bool, ddof: usize) -> Result<Array> {
        self.var(axes, keepdims, ddof)?.sqrt()
    }

    /// `log(sum(exp(x)))` over `axes` (empty: all), computed stably by subtracting the
    /// maximum. Float-valued; -inf for no elements.
    pub fn logsumexp(&self, axes: &[isize], keepdims: bool) -> Result<Array> {
        let p = plan("logsumexp", self.shape(), axes, keepdims)?;
        let x = self.to_float()?;
        if p.count == 0 {
            return full(&p.out, f64::NEG_INFINITY, x.dtype());
        }
        let m = x.max(axes, true)?;
        // An infinite maximum would make x - m NaN; shifting by 0 there gives the
        // right -inf / +inf (as SciPy does).
        let m = where_(&m.isinf()?, 0.0, &m)?;
        let s = x.sub(&m)?.exp()?.reduce_with(ReduceOp::Sum, &p)?.log()?;
        s.add(m.reshape_to(p.out.clone())?)
    }

    /// `exp(x - max) / sum(exp(x - max))` over `axes` (empty: all). Float-valued, same shape.
    pub fn softmax(&self, axes: &[isize]) -> Result<Array> {
        let p = plan("softmax", self.shape(), axes, true)?;
        let x = self.to_float()?;
        if p.count == 0 {
            return Ok(x);
        }
        let e = x.sub(&x.reduce_with(ReduceOp::Max, &p)?)?.exp()?;
        e.div(&e.reduce_with(ReduceOp::Sum, &p)?)
    }

    fn arg_reduce(&self, name: &'static str, op: ArgReduceOp, axis: isize, keepdims: bool) -> Result<Array> {
        let ax = normalize_axis(name, axis, self.ndim())?;
        if self.shape()[ax] == 0 {
            return Err(Error::shape(name, format!("axis {axis} of shape {:?} is empty", self.shape())));
        }
        let r = Array::from_op(ArgReduce { op, axis: ax }, vec![self.clone()])?;
        if keepdims {
            return Ok(r);
        }
        let mut out = r.shape().to_vec();
        out.remove(ax);
        r.reshape_to(out)
    }

    /// Index (`U32`) of the largest element along `axis`; ties give the first, NaN counts
    /// as largest. Errors if the axis is empty.
    pub fn argmax(&self, axis: isize, keepdims: bool) -> Result<Array> {
        self.arg_reduce("argmax", ArgReduceOp::ArgMax, axis, keepdims)
    }

    /// Index (`U32`) of the smallest element along `axis`; ties give the first.
    /// Errors if the axis is empty.
    pub fn argmin(&self, axis: isize, keepdims: bool) -> Result<Array> {
        self.arg_reduce("argmin", ArgReduceOp::ArgMin, axis, keepdims)
    }

    fn scan(&self, name: &'static str, op: ScanOp, axis: isize, reverse: bool) -> Result<Array> {
        let axis = normalize_axis(name, axis, self.ndim())?;
        Array::from_op(Scan { op, axis, reverse }, vec![self.clone()])
    }

    /// Inclusive cumulative sum along `axis` (from the end if `reverse`). Bool sums as `I32`.
    pub fn cumsum(&self, axis: isize, reverse: bool) -> Result<Array> {
        self.bool_to_i32()?.scan("cumsum", ScanOp::Sum, axis, reverse)
    }

    /// Inclusive cumulative product along `axis`. Bool multiplies as `I32`.
    pub fn cumprod(&self, axis: isize, reverse: bool) -> Result<Array> {
        self.bool_to_i32()?.scan("cumprod", ScanOp::Prod, axis, reverse)
    }

    /// Inclusive running maximum along `axis`.
    pub fn cummax(&self, axis: isize, reverse: bool) -> Result<Array> {
        self.scan("cummax", ScanOp::Max, axis, reverse)
    }

    /// Inclusive running minimum along `axis`.
    pub fn cummin(&self, axis: isize, reverse: bool) -> Result<Array> {
        self.scan("cummin", ScanOp::Min, axis, reverse)
    }
}
