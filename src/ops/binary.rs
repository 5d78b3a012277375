//! Elementwise ops of two inputs (arithmetic, comparisons, logic), `where_` and `clip`.
//!
//! Dtype rules (as MLX):
//! - Array with array: both cast to `promote(a, b)`.
//! - Array with scalar: the scalar is weakly typed and takes the array's dtype, except
//!   a float scalar with an integer or bool array gives `F32`, and an integer scalar
//!   with a bool array gives `I32`. An integer scalar that does not fit the integer
//!   dtype it takes is an error (as NumPy 2's `OverflowError`).
//! - Arithmetic (`add`, `sub`, `mul`, `pow`, `remainder`, `floor_divide`) on bool works
//!   in `I32`; `div` is true division (integers and bool give `F32`); `maximum` and
//!   `minimum` on bool stay bool (they are `or` and `and`, as in NumPy).
//! - Comparisons give bool; logical ops cast both sides to bool.
//!
//! Scalars become 0-d `Full` nodes (no upload); the `Binary` primitive broadcasts.

use crate::array::Array;
use crate::dtype::{DType, promote};
use crate::error::{Error, Result};
use crate::primitive::{Binary, BinaryOp, Full, Select};
use crate::shape::{broadcast_shapes, check_broadcast};

/// What kind of Rust value a scalar operand came from; decides how it is typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarKind {
    /// From `bool`.
    Bool,
    /// From an integer type.
    Int,
    /// From a float type.
    Float,
}

impl ScalarKind {
    /// The dtype a scalar of this kind has when no array decides it.
    fn default_dtype(self) -> DType {
        match self {
            ScalarKind::Bool => DType::Bool,
            ScalarKind::Int => DType::I32,
            ScalarKind::Float => DType::F32,
        }
    }
}

/// An operand of a binary op: an array, or a weakly typed scalar.
#[derive(Debug, Clone)]
pub enum Operand {
    /// An array.
    Array(Array),
    /// A scalar value and the kind of Rust value it came from.
    Scalar(f64, ScalarKind),
}

impl From<&Array> for Operand {
    fn from(a: &Array) -> Self {
        Operand::Array(a.clone())
    }
}
impl From<Array> for Operand {
    fn from(a: Array) -> Self {
        Operand::Array(a)
    }
}
impl From<f64> for Operand {
    fn from(v: f64) -> Self {
        Operand::Scalar(v, ScalarKind::Float)
    }
}
impl From<f32> for Operand {
    fn from(v: f32) -> Self {
        Operand::Scalar(v as f64, ScalarKind::Float)
    }
}
impl From<i32> for Operand {
    fn from(v: i32) -> Self {
        Operand::Scalar(v as f64, ScalarKind::Int)
    }
}
/// Values beyond 2^53 lose precision (scalars are held as `f64`).
impl From<i64> for Operand {
    fn from(v: i64) -> Self {
        Operand::Scalar(v as f64, ScalarKind::Int)
    }
}
impl From<u32> for Operand {
    fn from(v: u32) -> Self {
        Operand::Scalar(v as f64, ScalarKind::Int)
    }
}
impl From<bool> for Operand {
    fn from(v: bool) -> Self {
        Operand::Scalar(if v { 1.0 } else { 0.0 }, ScalarKind::Bool)
    }
}

impl Operand {
    /// The stream of an array operand (a scalar has none).
    pub(crate) fn stream(&self) -> Option<crate::stream::Stream> {
        match self {
            Operand::Array(a) => Some(a.stream()),
            Operand::Scalar(..) => None,
        }
    }
    fn shape(&self) -> &[usize] {
        match self {
            Operand::Array(a) => a.shape(),
            Operand::Scalar(..) => &[],
        }
    }

    /// The dtype a scalar of `kind` takes next to an array of `d`.
    fn weak(d: DType, kind: ScalarKind) -> DType {
        match kind {
            ScalarKind::Float if !d.is_float() => DType::F32,
            ScalarKind::Int if d == DType::Bool => DType::I32,
            ScalarKind::Float | ScalarKind::Int | ScalarKind::Bool => d,
        }
    }

    /// The dtype both operands are brought to before the op.
    fn common(a: &Operand, b: &Operand) -> DType {
        match (a, b) {
            (Operand::Array(x), Operand::Array(y)) => promote(x.dtype(), y.dtype()),
            (Operand::Array(x), Operand::Scalar(_, k)) | (Operand::Scalar(_, k), Operand::Array(x)) => {
                Self::weak(x.dtype(), *k)
            }
            (Operand::Scalar(_, j), Operand::Scalar(_, k)) => promote(j.default_dtype(), k.default_dtype()),
        }
    }

    /// This operand as an array of `dtype`.
    pub(crate) fn to_array(&self, op: &'static str, dtype: DType) -> Result<Array> {
        match self {
            Operand::Array(a) => a.astype(dtype),
            Operand::Scalar(v, _) => scalar_array(op, *v, dtype),
        }
    }
}

/// Checks that `value` can be stored in `dtype` without wrapping or saturating: for
/// integer dtypes it must be finite and, truncated, in range (NumPy raises here too).
pub(crate) fn check_fits(op: &'static str, value: f64, dtype: DType) -> Result<()> {
    let Some((lo, hi)) = int_range(dtype) else { return Ok(()) };
    let t = value.trunc();
    if !value.is_finite() || t < lo || t > hi {
        return Err(Error::dtype(op, dtype, format!("the value {} does not fit {dtype}", short(value))));
    }
    Ok(())
}

/// `v` for a message: integers as digits up to 1e16, anything larger in `1e300` form
/// (`{}` would print all 301 digits).
pub(crate) fn short(v: f64) -> String {
    if v.is_finite() && v.abs() >= 1e16 { format!("{v:e}") } else { format!("{v}") }
}

/// The integral `f64` values an integer dtype holds, inclusive (`None` for floats and
/// bool).
fn int_range(dtype: DType) -> Option<(f64, f64)> {
    match dtype {
        DType::U32 => Some((0.0, u32::MAX as f64)),
        DType::I32 => Some((i32::MIN as f64, i32::MAX as f64)),
        // i64::MAX as f64 is 2^63, itself out of range: the largest f64 below it.
        DType::I64 => Some((i64::MIN as f64, 9.223_372_036_854_775e18)),
        DType::Bool | DType::F16 | DType::BF16 | DType::F32 | DType::F64 => None,
    }
}

/// A 0-d `Full` node holding `value` in `dtype`.
pub(crate) fn scalar_array(op: &'static str, value: f64, dtype: DType) -> Result<Array> {
    check_fits(op, value, dtype)?;
    Array::from_op(Full { value, shape: vec![], dtype }, [])
}

/// Builds `op(a, b)` with the module's dtype rules.
/// The output shape and dtype come from `Binary::infer`, which also rejects shapes that
/// do not broadcast.
pub(crate) fn binary(name: &'static str, op: BinaryOp, a: Operand, b: Operand) -> Result<Array> {
    // Shapes first, so a mismatch is reported under the caller's name before any cast.
    check_broadcast(name, a.shape(), b.shape())?;
    let common = Operand::common(&a, &b);
    use BinaryOp::*;
    // (the primitive op, the dtype both inputs are cast to)
    let (op, in_dtype) = match op {
        Add | Sub | Mul | Pow | Remainder | FloorDivide => {
            (op, if common == DType::Bool { DType::I32 } else { common })
        }
        Div | Atan2 => (op, common.to_float()),
        Maximum if common == DType::Bool => (LogicalOr, common),
        Minimum if common == DType::Bool => (LogicalAnd, common),
        Maximum | Minimum | Eq | Ne | Lt | Le | Gt | Ge => (op, common),
        LogicalAnd | LogicalOr | LogicalXor => (op, DType::Bool),
    };
    let (a, b) = match (a, b) {
        // Nothing to cast or to make: the node follows its inputs by `from_op`'s own rule,
        // without the scope `following` opens for the parts (with it, placing the node
        // was a fifth of building an op: callgrind, the 1000-op chain, session 18). The
        // handles move into the node: a clone each is two atomic operations per input.
        (Operand::Array(x), Operand::Array(y)) if x.dtype() == in_dtype && y.dtype() == in_dtype => {
            return Array::from_op(Binary { op }, [x, y]);
        }
        other => other,
    };
    crate::stream::following([a.stream(), b.stream()].into_iter().flatten(), || {
        let x = a.to_array(name, in_dtype)?;
        let y = b.to_array(name, in_dtype)?;
        Array::from_op(Binary { op }, [x, y])
    })
}

macro_rules! binary_methods {
    ($($(#[$doc:meta])* $name:ident => $op:ident;)*) => {
        impl Array {
            $(
                $(#[$doc])*
                pub fn $name(&self, other: impl Into<Operand>) -> Result<Array> {
                    binary(stringify!($name), BinaryOp::$op, Operand::Array(self.clone()), other.into())
                }
            )*
        }
    };
}

binary_methods! {
    /// Elementwise `self + other`, broadcasting.
    add => Add;
    /// Elementwise `self - other`, broadcasting.
    sub => Sub;
    /// Elementwise `self * other`, broadcasting.
    mul => Mul;
    /// True division `self / other`: integer and bool inputs give `F32`. Integer division
    /// by zero cannot happen here; float division by zero gives inf or NaN.
    div => Div;
    /// `self ** other`. Integers stay integers (a negative integer exponent gives
    /// whatever the backend computes; NumPy raises).
    pow => Pow;
    /// Remainder whose sign follows the divisor (NumPy's `remainder`); integer remainder
    /// by zero gives 0.
    remainder => Remainder;
    /// Division rounded toward negative infinity; integer division by zero gives 0.
    floor_divide => FloorDivide;
    /// Elementwise maximum (NaN propagates as the backend's kernel defines).
    maximum => Maximum;
    /// Elementwise minimum.
    minimum => Minimum;
    /// `self == other`, bool.
    eq => Eq;
    /// `self != other`, bool.
    ne => Ne;
    /// `self < other`, bool.
    lt => Lt;
    /// `self <= other`, bool.
    le => Le;
    /// `self > other`, bool.
    gt => Gt;
    /// `self >= other`, bool.
    ge => Ge;
    /// Logical and; both sides are read as bool (non-zero is true).
    logical_and => LogicalAnd;
    /// Logical or; both sides are read as bool.
    logical_or => LogicalOr;
    /// Logical exclusive or; both sides are read as bool.
    logical_xor => LogicalXor;
    /// `atan2(self, other)`: the angle in radians, in `[-pi, pi]`, of the point
    /// `(other, self)`, with C's rules for zeros and infinities (NumPy's `arctan2`).
    /// Float-valued: integer and bool inputs compute in `F32`.
    ///
    /// ```
    /// let y = lazuli::Array::from_slice(&[1.0f32, -1.0], &[2])?;
    /// let a = y.atan2(-1.0)?.to_vec::<f32>()?;
    /// assert!((a[0] - 3.0 * std::f32::consts::FRAC_PI_4).abs() < 1e-6);
    /// assert!((a[1] + 3.0 * std::f32::consts::FRAC_PI_4).abs() < 1e-6);
    /// # Ok::<(), lazuli::Error>(())
    /// ```
    atan2 => Atan2;
}

/// `where(cond, a, b)`: `a` where `cond` is true (non-zero), else `b`, broadcasting all
/// three. `a` and `b` follow the binary-op dtype rules (two scalars: bool < `I32` <
/// `F32`).
///
/// ```
/// let c = lazuli::Array::from_slice(&[true, false], &[2])?;
/// let x = lazuli::where_(&c, 1.0f32, 0.0f32)?;
/// assert_eq!(x.shape(), &[2]);
/// # Ok::<(), lazuli::Error>(())
/// ```
pub fn where_(cond: &Array, a: impl Into<Operand>, b: impl Into<Operand>) -> Result<Array> {
    let (a, b) = (a.into(), b.into());
    let ab = broadcast_shapes("where", a.shape(), b.shape())?;
    broadcast_shapes("where", cond.shape(), &ab)?;
    let dtype = Operand::common(&a, &b);
    let streams = [Some(cond.stream()), a.stream(), b.stream()].into_iter().flatten();
    crate::stream::following(streams, || {
        let inputs = vec![cond.astype(DType::Bool)?, a.to_array("where", dtype)?, b.to_array("where", dtype)?];
        Array::from_op(Select, inputs)
    })
}

impl Array {
    /// Limits values to `[min, max]` (either bound optional): `minimum(maximum(x, min), max)`,
    /// so `min > max` gives `max` everywhere, as NumPy.
    ///
    /// Bounds are scalars with the usual rules, except that a bound with an integral value
    /// counts as an integer scalar: clipping an integer array to `0.0..=5.0` keeps its
    /// dtype, while a fractional bound gives `F32`. On integer arrays a bound beyond the
    /// dtype's range (below its minimum, above its maximum) is satisfied by every element
    /// and is ignored.
    pub fn clip(&self, min: Option<f64>, max: Option<f64>) -> Result<Array> {
        fn bound(v: f64) -> Operand {
            let kind = if v.is_finite() && v.fract() == 0.0 { ScalarKind::Int } else { ScalarKind::Float };
            Operand::Scalar(v, kind)
        }
        // On integers, a bound beyond the dtype's range holds for every element already
        // (clip(int32, -1e300, 5) is clip(x, None, 5)), so it is dropped, not refused.
        let (min, max) = match int_range(self.dtype()) {
            Some((lo, hi)) => (min.filter(|&m| m.is_nan() || m >= lo), max.filter(|&m| m.is_nan() || m <= hi)),
            None => (min, max),
        };
        let mut out = self.clone();
        if let Some(lo) = min {
            out = binary("clip", BinaryOp::Maximum, Operand::Array(out), bound(lo))?;
        }
        if let Some(hi) = max {
            out = binary("clip", BinaryOp::Minimum, Operand::Array(out), bound(hi))?;
        }
        Ok(out)
    }
}
