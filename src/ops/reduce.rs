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

/// Most elements an integer mean sums exactly (see [`Array::mean`]): 2^15 values of
/// 16-bit halves sum within 32 bits.
const EXACT_INT_MEAN: usize = 1 << 15;

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
        let r = Array::from_op(Reduce { op, axes: p.axes.clone() }, [self.clone()])?;
        r.reshape_to(p.out.clone())
    }

    /// A reduction with an identity for empty input.
    fn reduce_or(&self, name: &'static str, op: ReduceOp, axes: &[isize], keepdims: bool, empty: f64) -> Result<Array> {
        let p = plan(name, self.shape(), axes, keepdims)?;
        if p.count == 0 {
            return crate::stream::following([self.stream()], || full(&p.out, empty, self.dtype()));
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
    ///
    /// Accumulation: f16 and bf16 sum in f32 and round once at the end (a 16-bit partial
    /// sum overflows at 65504). Integers (and bool) give `F32` and are summed exactly
    /// while at most 2^15 elements meet in one output (as 16-bit halves in 32-bit
    /// integer sums), so the result is within about one f32 rounding of the true mean
    /// even when large values cancel; longer reductions sum in f32.
    pub fn mean(&self, axes: &[isize], keepdims: bool) -> Result<Array> {
        let p = plan("mean", self.shape(), axes, keepdims)?;
        let out_dtype = self.dtype().to_float();
        if p.count == 0 {
            return crate::stream::following([self.stream()], || full(&p.out, f64::NAN, out_dtype));
        }
        let sum = match self.dtype() {
            DType::Bool | DType::U32 | DType::I32 | DType::I64 if p.count <= EXACT_INT_MEAN => {
                self.exact_int_sum(&p)?
            }
            DType::Bool | DType::U32 | DType::I32 | DType::I64 | DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {
                self.to_float()?.to_accumulator()?.reduce_with(ReduceOp::Sum, &p)?
            }
        };
        sum.div(p.count as f64)?.astype(out_dtype)
    }

    /// The sum of an integer array over the plan's axes as `F32`, from the exact integer
    /// sums of its high and low 16-bit halves (each fits 32 bits for up to 2^15 terms),
    /// combined with at most two roundings. Summing f32 conversions instead rounds every
    /// element beyond 2^24 and every partial sum: 7 values near ±2^31 whose true sum is -7
    /// gave -8 on one device and -6 on another.
    fn exact_int_sum(&self, p: &Plan) -> Result<Array> {
        let x = if self.dtype() == DType::Bool { self.astype(DType::I32)? } else { self.clone() };
        // Python-style floor division and remainder: hi * 65536 + lo == x, 0 <= lo < 65536.
        let hi = x.floor_divide(65536)?.reduce_with(ReduceOp::Sum, p)?;
        let lo = x.remainder(65536)?.reduce_with(ReduceOp::Sum, p)?;
        // Carry the low sum's high half into `hi`, still in integers: past 256 terms `lo`
        // passes 2^24, and rounding it alone left its error in a result that `hi * 65536`
        // had cancelled (600 x 65535, 600 x -65535 and a 1 gave a mean of 0, not 1/1201).
        // Now `hi` is rounded only when the sum is beyond 2^40, and `lo` never is.
        let hi = hi.add(&lo.floor_divide(65536)?)?;
        let lo = lo.remainder(65536)?;
        hi.astype(DType::F32)?.mul(65536.0)?.add(&lo.astype(DType::F32)?)
    }
    /// Variance over `axes` (empty: all) with `ddof` delta degrees of freedom:
    /// `sum((x - mean)^2) / (n - ddof)`. Float-valued; inf or NaN when `n <= ddof`
    /// (NumPy warns and gives the same). Accumulates as [`Array::mean`] does: f16 and
    /// bf16 in f32, rounded once.
    pub fn var(&self, axes: &[isize], keepdims: bool, ddof: usize) -> Result<Array> {
        let p = plan("var", self.shape(), axes, keepdims)?;
        let out_dtype = self.dtype().to_float();
        if p.count == 0 {
            return crate::stream::following([self.stream()], || full(&p.out, f64::NAN, out_dtype));
        }
        let x = self.to_float()?.to_accumulator()?;
        // Integers take their exact mean (already F32); floats the mean of `x`.
        let mean = if self.dtype().is_float() { x.mean(axes, true)? } else { self.mean(axes, true)? };
        let dev = x.sub(&mean)?.square()?;
        let denom = p.count.saturating_sub(ddof) as f64;
        dev.reduce_with(ReduceOp::Sum, &p)?.div(denom)?.astype(out_dtype)
    }

    /// Standard deviation: `sqrt(var(axes, keepdims, ddof))`.
    pub fn std(&self, axes: &[isize], keepdims: bool, ddof: usize) -> Result<Array> {
        self.var(axes, keepdims, ddof)?.sqrt()
    }

    /// `log(sum(exp(x)))` over `axes` (empty: all), computed stably by subtracting the
    /// maximum. Float-valued; -inf for no elements. f16 and bf16 sum in f32.
    pub fn logsumexp(&self, axes: &[isize], keepdims: bool) -> Result<Array> {
        let p = plan("logsumexp", self.shape(), axes, keepdims)?;
        let x = self.to_float()?;
        if p.count == 0 {
            return crate::stream::following([x.stream()], || full(&p.out, f64::NEG_INFINITY, x.dtype()));
        }
        let m = x.max(axes, true)?;
        // An infinite maximum would make x - m NaN; shifting by 0 there gives the
        // right -inf / +inf (as SciPy does).
        let m = where_(&m.isinf()?, 0.0, &m)?;
        let s = x.sub(&m)?.exp()?.to_accumulator()?.reduce_with(ReduceOp::Sum, &p)?.log()?;
        s.add(m.reshape_to(p.out.clone())?)?.astype(x.dtype())
    }

    /// `exp(x - max) / sum(exp(x - max))` over `axes` (empty: all). Float-valued, same shape;
    /// f16 and bf16 sum in f32, like [`Array::mean`].
    pub fn softmax(&self, axes: &[isize]) -> Result<Array> {
        let p = plan("softmax", self.shape(), axes, true)?;
        let x = self.to_float()?;
        if p.count == 0 {
            return Ok(x);
        }
        let m = x.reduce_with(ReduceOp::Max, &p)?;
        let e = x.sub(&m)?.exp()?;
        // Where the device fuses reductions into row kernels (the GPU), all of this is one
        // kernel: the max, the sum and the division each a pass over the row, `e`
        // recomputed rather than stored.
        let s = e.to_accumulator()?.reduce_with(ReduceOp::Sum, &p)?;
        e.div(&s)?.astype(x.dtype())
    }

    /// This array in the dtype its sums accumulate in: f16 and bf16 as `F32`, any other
    /// dtype as it is. A 16-bit sum of `exp(x - max)` values (each at most 1) overflows
    /// f16 past 65504 terms: softmax over 100k equal logits gave 0 everywhere.
    pub(crate) fn to_accumulator(&self) -> Result<Array> {
        match self.dtype() {
            DType::F16 | DType::BF16 => self.astype(DType::F32),
            DType::F32 | DType::F64 | DType::Bool | DType::U32 | DType::I32 | DType::I64 => Ok(self.clone()),
        }
    }

    fn arg_reduce(&self, name: &'static str, op: ArgReduceOp, axis: isize, keepdims: bool) -> Result<Array> {
        let ax = normalize_axis(name, axis, self.ndim())?;
        if self.shape()[ax] == 0 {
            return Err(Error::shape(name, format!("axis {axis} of shape {:?} is empty", self.shape())));
        }
        let r = Array::from_op(ArgReduce { op, axis: ax }, [self.clone()])?;
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

    /// A 0-d input scans as one element (`[1]`, as NumPy's flattening `cumsum`), so
    /// axis 0 or -1 of a 0-d array is accepted.
    fn scan(&self, name: &'static str, op: ScanOp, axis: isize, reverse: bool) -> Result<Array> {
        let x = if self.ndim() == 0 && (axis == 0 || axis == -1) { self.reshape_to(vec![1])? } else { self.clone() };
        let axis = normalize_axis(name, axis, x.ndim())?;
        Array::from_op(Scan { op, axis, reverse }, [x])
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
