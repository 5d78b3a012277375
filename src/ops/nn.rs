//! Ops for training networks: activations (`softplus`, `silu`, `leaky_relu`),
//! `log_softmax`, `logaddexp`, `one_hot`, the losses [`cross_entropy`] and [`mse`], and
//! [`dropout`].
//!
//! Everything is composed from other ops, so autodiff differentiates it through their
//! primitives; no op here computes on the host. The formulas are the numerically stable
//! ones (no `exp` of a large positive value anywhere), and they pick branches with
//! `where_` rather than `abs` or `maximum` so that gradients at ties are the true ones
//! (`softplus'(0) = 1/2`).

use crate::array::Array;
use crate::dtype::{DType, promote};
use crate::error::{Error, Result};
use crate::primitive::BinaryOp;
use crate::shape::normalize_axes;

use super::binary::{Operand, binary, scalar_array, where_};
use super::creation::arange;
use super::random;

/// How a loss folds its per-element values into the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Reduction {
    /// No folding: one loss per element (per sample for [`cross_entropy`]).
    None,
    /// The mean over every element (NaN when there are none).
    #[default]
    Mean,
    /// The sum over every element (0 when there are none).
    Sum,
}

impl Reduction {
    fn apply(self, loss: Array) -> Result<Array> {
        match self {
            Reduction::None => Ok(loss),
            Reduction::Mean => loss.mean(&[], false),
            Reduction::Sum => loss.sum(&[], false),
        }
    }
}

/// `a` as an array of `dtype` (a scalar becomes a 0-d array).
fn operand_as(op: &'static str, a: &Operand, dtype: DType) -> Result<Array> {
    match a {
        Operand::Array(x) => x.astype(dtype),
        Operand::Scalar(v, _) => scalar_array(op, *v, dtype),
    }
}

/// `log(exp(a) + exp(b))` elementwise, broadcasting, computed stably as
/// `max + log1p(exp(min - max))` (NumPy's `logaddexp`). Float-valued: the operands
/// follow the binary-op dtype rules, and an integer or bool result type becomes `F32`.
///
/// Equal infinities give themselves (`logaddexp(-inf, -inf) = -inf`, `(inf, inf) = inf`);
/// NaN in either operand gives NaN.
///
/// ```
/// let a = lazuli::Array::from_slice(&[0.0f32, 1000.0], &[2])?;
/// let r = lazuli::logaddexp(&a, 0.0f32)?.to_vec::<f32>()?;
/// assert!((r[0] - std::f32::consts::LN_2).abs() < 1e-6);
/// assert_eq!(r[1], 1000.0);
/// # Ok::<(), lazuli::Error>(())
/// ```
pub fn logaddexp(a: impl Into<Operand>, b: impl Into<Operand>) -> Result<Array> {
    const OP: &str = "logaddexp";
    let (a, b) = (a.into(), b.into());
    // The binary-op rules decide the common dtype (and report bad shapes under this
    // name); `maximum` builds no work unless evaluated.
    let dtype = binary(OP, BinaryOp::Maximum, a.clone(), b.clone())?.dtype().to_float();
    let (x, y) = crate::stream::following([a.stream(), b.stream()].into_iter().flatten(), || {
        Ok((operand_as(OP, &a, dtype)?, operand_as(OP, &b, dtype)?))
    })?;
    // On a tie this picks hi = y, lo = x, whose branch y + log1p(exp(x - y)) has the
    // true gradient 1/2 for each side; lo - hi <= 0 keeps exp from overflowing.
    let x_gt = x.gt(&y)?;
    let hi = where_(&x_gt, &x, &y)?;
    let lo = where_(&x_gt, &y, &x)?;
    // inf - inf would be NaN; equal infinities are their own result (hi + ln 2 = hi).
    let same_inf = x.eq(&y)?.logical_and(x.isinf()?)?;
    let d = where_(&same_inf, 0.0, lo.sub(&hi)?)?;
    hi.add(d.exp()?.log1p()?)
}

impl Array {
    /// `x - logsumexp(x)` over `axes` (empty: all), the log of [`Array::softmax`],
    /// computed stably as `(x - max) - log(sum(exp(x - max)))`. Float-valued (integer
    /// and bool input is cast to `F32`), same shape; f16 and bf16 sum in f32.
    ///
    /// `-inf` entries give `-inf` as long as their slice has a finite maximum. A slice
    /// that is all `-inf` gives NaN; one that holds `+inf` gives NaN there and `-inf`
    /// elsewhere (as SciPy's `log_softmax`).
    pub fn log_softmax(&self, axes: &[isize]) -> Result<Array> {
        let x = self.astype(self.dtype().to_float())?;
        let axes_n =
            if axes.is_empty() { (0..x.ndim()).collect() } else { normalize_axes("log_softmax", axes, x.ndim())? };
        if axes_n.iter().any(|&a| x.shape()[a] == 0) {
            return Ok(x);
        }
        let m = x.max(axes, true)?;
        // Shifting by an infinite maximum would make every entry NaN; by 0 the finite
        // and -inf entries keep their meaning (as logsumexp does).
        let m = where_(&m.isinf()?, 0.0, &m)?;
        let shifted = x.sub(&m)?;
        let lse = shifted.exp()?.to_accumulator()?.sum(axes, true)?.log()?;
        shifted.sub(&lse)?.astype(x.dtype())
    }

    /// `log(exp(self) + exp(other))` elementwise: see the free function [`logaddexp`].
    pub fn logaddexp(&self, other: impl Into<Operand>) -> Result<Array> {
        logaddexp(self, other)
    }

    /// `log(1 + exp(x))`, as `logaddexp(x, 0)`: exact for large `|x|` (`softplus(100) =
    /// 100`, `softplus(-100) = exp(-100)`). Float-valued (integer and bool input is cast
    /// to `F32`).
    pub fn softplus(&self) -> Result<Array> {
        let x = self.astype(self.dtype().to_float())?;
        logaddexp(&x, 0.0)
    }

    /// SiLU (swish): `x * sigmoid(x)`. Float-valued (integer and bool input is cast to
    /// `F32`).
    pub fn silu(&self) -> Result<Array> {
        let x = self.astype(self.dtype().to_float())?;
        x.mul(x.sigmoid()?)
    }

    /// `x` where `x > 0`, else `negative_slope * x`. Float-valued (integer and bool input
    /// is cast to `F32`). Errors on a non-finite slope.
    pub fn leaky_relu(&self, negative_slope: f64) -> Result<Array> {
        if !negative_slope.is_finite() {
            return Err(Error::invalid("leaky_relu", format!("negative_slope must be finite, got {negative_slope}")));
        }
        let x = self.astype(self.dtype().to_float())?;
        where_(&x.gt(0.0)?, &x, x.mul(negative_slope)?)
    }
}

/// One-hot rows: the output has shape `indices.shape + [num_classes]` and dtype `dtype`,
/// with 1 at position `indices[i]` of row `i` and 0 elsewhere. An index that is negative
/// or not below `num_classes` gives an all-zero row (no error: the values are not known
/// when the graph is built).
///
/// Errors unless `indices` is an integer dtype (`int32`, `uint32`, `int64`).
///
/// ```
/// let i = lazuli::Array::from_slice(&[2i32, 0, 5], &[3])?;
/// let h = lazuli::one_hot(&i, 3, lazuli::DType::F32)?;
/// assert_eq!(h.to_vec::<f32>()?, vec![0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
/// # Ok::<(), lazuli::Error>(())
/// ```
pub fn one_hot(indices: &Array, num_classes: usize, dtype: DType) -> Result<Array> {
    if !indices.dtype().is_int() {
        return Err(Error::dtype(
            "one_hot",
            indices.dtype(),
            "indices must be int32, uint32 or int64 (cast class labels with astype)",
        ));
    }
    // Checked here so a size error names this op, not the `arange` inside.
    let mut out = indices.shape().to_vec();
    out.push(num_classes);
    crate::shape::check_size("one_hot", &out, dtype)?;
    // Compare in the indices' own dtype so no index wraps into range.
    let classes =
        crate::stream::following([indices.stream()], || arange(0.0, num_classes as f64, 1.0, indices.dtype()))?;
    indices.expand_dims(&[-1])?.eq(&classes)?.astype(dtype)
}

/// Softmax cross-entropy from unnormalised `logits` of shape `[..., C]` (a float dtype)
/// and integer class `labels` of shape `[...]` (the logits' shape without its last
/// axis): `-log_softmax(logits)[..., label]`, reduced as `reduction` says
/// (`Reduction::None` keeps the labels' shape).
///
/// Labels should be in `0..C`; like [`Array::take_along_axis`], a negative label counts
/// from the end and one beyond the range reads the nearest class (no data-dependent
/// error exists). Logits of `-inf` (masked classes) are fine as long as the labelled
/// class is finite.
///
/// Errors on 0-d or zero-class logits, non-float logits, non-integer labels, and labels
/// whose shape is not the logits' shape without the last axis.
///
/// ```
/// use lazuli::{Array, Reduction};
/// let logits = Array::from_slice(&[0.0f32, 0.0], &[1, 2])?;
/// let labels = Array::from_slice(&[1i32], &[1])?;
/// let l = lazuli::cross_entropy(&logits, &labels, Reduction::Mean)?.item::<f32>()?;
/// assert!((l - std::f32::consts::LN_2).abs() < 1e-6);
/// # Ok::<(), lazuli::Error>(())
/// ```
pub fn cross_entropy(logits: &Array, labels: &Array, reduction: Reduction) -> Result<Array> {
    const OP: &str = "cross_entropy";
    if logits.ndim() == 0 {
        return Err(Error::shape(OP, "logits must have a class axis (shape [..., C]), got a 0-d array"));
    }
    if !logits.dtype().is_float() {
        return Err(Error::dtype(OP, logits.dtype(), "logits must be floating point; cast with astype(DType::F32)"));
    }
    if !labels.dtype().is_int() {
        return Err(Error::dtype(
            OP,
            labels.dtype(),
            "labels are integer class indices (int32, uint32 or int64); probabilities or one-hot \
             targets are not accepted",
        ));
    }
    let (batch, classes) = logits.shape().split_at(logits.ndim() - 1);
    if labels.shape() != batch {
        return Err(Error::shape(
            OP,
            format!(
                "labels of shape {:?} must have the shape of logits {:?} without the class axis, {batch:?}",
                labels.shape(),
                logits.shape()
            ),
        ));
    }
    if classes[0] == 0 {
        return Err(Error::shape(OP, format!("logits of shape {:?} have no classes", logits.shape())));
    }
    // A gather rather than a one-hot product: 0 * -inf would make masked logits NaN.
    let lsm = logits.log_softmax(&[-1])?;
    let picked = lsm.take_along_axis(&labels.expand_dims(&[-1])?, -1)?.squeeze(&[-1])?;
    reduction.apply(picked.neg()?)
}

/// Mean squared error: `(pred - target)^2`, broadcasting the two as NumPy does, reduced
/// as `reduction` says (`Reduction::None` keeps the broadcast shape). Float-valued: both
/// are cast to the float type of their promoted dtype first (integers give `F32`).
///
/// ```
/// use lazuli::{Array, Reduction};
/// let p = Array::from_slice(&[1.0f32, 2.0], &[2])?;
/// let t = Array::from_slice(&[0.0f32, 4.0], &[2])?;
/// assert_eq!(lazuli::mse(&p, &t, Reduction::Mean)?.item::<f32>()?, 2.5);
/// # Ok::<(), lazuli::Error>(())
/// ```
pub fn mse(pred: &Array, target: &Array, reduction: Reduction) -> Result<Array> {
    let dtype = promote(pred.dtype(), target.dtype()).to_float();
    let diff = binary("mse", BinaryOp::Sub, pred.astype(dtype)?.into(), target.astype(dtype)?.into())?;
    reduction.apply(diff.square()?)
}

/// Inverted dropout: each element of `x` is kept with probability `1 - p` and scaled by
/// `1 / (1 - p)`, or set to 0, so the expectation is `x`. The mask comes from
/// [`random::bernoulli`] with `key` (a `random::key`), so the same key gives the same
/// mask on every device. `p = 0` returns `x` itself (the key is then not checked).
///
/// Errors unless `0 <= p < 1`, on a non-float `x`, and on a malformed key.
///
/// ```
/// use lazuli::{Array, random};
/// let x = lazuli::ones(&[1000], lazuli::DType::F32)?;
/// let y = lazuli::dropout(&x, &random::key(0)?, 0.5)?.to_vec::<f32>()?;
/// assert!(y.iter().all(|&v| v == 0.0 || v == 2.0));
/// # Ok::<(), lazuli::Error>(())
/// ```
pub fn dropout(x: &Array, key: &Array, p: f64) -> Result<Array> {
    if !(0.0..1.0).contains(&p) {
        return Err(Error::invalid("dropout", format!("p must be in [0, 1), got {p}")));
    }
    if !x.dtype().is_float() {
        return Err(Error::dtype("dropout", x.dtype(), "x must be floating point; cast with astype(DType::F32)"));
    }
    if p == 0.0 {
        return Ok(x.clone());
    }
    let keep = random::bernoulli(key, 1.0 - p, x.shape())?;
    where_(&keep, x.mul(1.0 / (1.0 - p))?, 0.0)
}
