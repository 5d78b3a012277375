//! Elementwise ops of one input, and dtype conversion.
//!
//! Float-only ops (exp, log, sin...) cast integer and bool input to `F32` first
//! (`DType::to_float`). On integers, `floor`/`ceil`/`round` are the identity and
//! `isnan`/`isinf` are all false; both build no kernel work beyond a constant.
//! Bool follows NumPy where it has a meaning (`abs`, `floor`... identity) and is an
//! error where NumPy raises (`neg`, `sign`); `square` of bool gives `I32`.

use crate::array::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::primitive::{AsType, Full, Unary, UnaryOp};

impl Array {
    /// Converts to `dtype` (`as` semantics: floats truncate toward zero into integers,
    /// saturating; any non-zero value is `true`).
    pub fn astype(&self, dtype: DType) -> Result<Array> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        Array::from_op(AsType { dtype }, [self.clone()])
    }

    fn unary_node(&self, op: UnaryOp) -> Result<Array> {
        Array::from_op(Unary { op }, [self.clone()])
    }

    /// A float-only op: integer and bool input is cast to `F32` first.
    fn float_unary(&self, op: UnaryOp) -> Result<Array> {
        let x = self.astype(self.dtype().to_float())?;
        x.unary_node(op)
    }

    fn no_bool(&self, op: &'static str) -> Result<()> {
        if self.dtype() == DType::Bool {
            return Err(Error::dtype(op, DType::Bool, "not defined for bool; use logical_not or cast first"));
        }
        Ok(())
    }

    /// `-x`. Unsigned integers wrap. Errors on bool (as NumPy).
    pub fn neg(&self) -> Result<Array> {
        self.no_bool("neg")?;
        self.unary_node(UnaryOp::Neg)
    }

    /// `|x|`. The identity on bool and unsigned integers.
    pub fn abs(&self) -> Result<Array> {
        if matches!(self.dtype(), DType::Bool | DType::U32) {
            return Ok(self.clone());
        }
        self.unary_node(UnaryOp::Abs)
    }

    /// -1, 0 or 1 by the sign of `x`: +0 at either zero, NaN stays NaN (as NumPy). Errors
    /// on bool (as NumPy).
    pub fn sign(&self) -> Result<Array> {
        self.no_bool("sign")?;
        self.unary_node(UnaryOp::Sign)
    }

    /// `x * x`. Bool is cast to `I32` first.
    pub fn square(&self) -> Result<Array> {
        let x = if self.dtype() == DType::Bool { self.astype(DType::I32)? } else { self.clone() };
        x.unary_node(UnaryOp::Square)
    }

    /// Largest integer not above `x`. The identity on integers and bool.
    pub fn floor(&self) -> Result<Array> {
        self.rounding(UnaryOp::Floor)
    }

    /// Smallest integer not below `x`. The identity on integers and bool.
    pub fn ceil(&self) -> Result<Array> {
        self.rounding(UnaryOp::Ceil)
    }

    /// Nearest integer, halves to even (as NumPy). The identity on integers and bool.
    pub fn round(&self) -> Result<Array> {
        self.rounding(UnaryOp::Round)
    }

    fn rounding(&self, op: UnaryOp) -> Result<Array> {
        if !self.dtype().is_float() {
            return Ok(self.clone());
        }
        self.unary_node(op)
    }

    /// True where `x` is NaN. All false for integers and bool.
    pub fn isnan(&self) -> Result<Array> {
        self.float_test(UnaryOp::IsNan)
    }

    /// True where `x` is +inf or -inf. All false for integers and bool.
    pub fn isinf(&self) -> Result<Array> {
        self.float_test(UnaryOp::IsInf)
    }

    fn float_test(&self, op: UnaryOp) -> Result<Array> {
        if !self.dtype().is_float() {
            return Array::from_op(Full { value: 0.0, shape: self.shape().to_vec(), dtype: DType::Bool }, []);
        }
        self.unary_node(op)
    }

    /// Logical not; the input is read as bool (non-zero is true).
    pub fn logical_not(&self) -> Result<Array> {
        self.astype(DType::Bool)?.unary_node(UnaryOp::LogicalNot)
    }

    /// `max(x, 0)`. Keeps the dtype; the identity on bool and unsigned integers.
    pub fn relu(&self) -> Result<Array> {
        if matches!(self.dtype(), DType::Bool | DType::U32) {
            return Ok(self.clone());
        }
        self.maximum(0)
    }

    /// GELU, exact form: `x * (1 + erf(x / sqrt(2))) / 2`. Float-valued.
    pub fn gelu(&self) -> Result<Array> {
        let x = self.astype(self.dtype().to_float())?;
        let cdf = x.mul(std::f64::consts::FRAC_1_SQRT_2)?.erf()?.add(1.0)?.mul(0.5)?;
        x.mul(&cdf)
    }
}

macro_rules! float_unary_methods {
    ($($(#[$doc:meta])* $name:ident => $op:ident;)*) => {
        impl Array {
            $(
                $(#[$doc])*
                ///
                /// Float-valued: integer and bool input is cast to `F32` first.
                pub fn $name(&self) -> Result<Array> {
                    self.float_unary(UnaryOp::$op)
                }
            )*
        }
    };
}

float_unary_methods! {
    /// `e^x`.
    exp => Exp;
    /// `e^x - 1`, accurate near 0.
    expm1 => Expm1;
    /// Natural logarithm (NaN below 0, -inf at 0).
    log => Log;
    /// `ln(1 + x)`, accurate near 0.
    log1p => Log1p;
    /// Base-2 logarithm.
    log2 => Log2;
    /// Square root (NaN below 0).
    sqrt => Sqrt;
    /// `1 / sqrt(x)`.
    rsqrt => Rsqrt;
    /// `1 / x`.
    reciprocal => Reciprocal;
    /// Sine (radians).
    sin => Sin;
    /// Cosine (radians).
    cos => Cos;
    /// Tangent (radians).
    tan => Tan;
    /// Hyperbolic tangent.
    tanh => Tanh;
    /// Logistic sigmoid `1 / (1 + e^-x)`.
    sigmoid => Sigmoid;
    /// Gauss error function.
    erf => Erf;
    /// Inverse error function: `erf(erfinv(x)) = x` on (-1, 1); ±inf at ±1 and NaN
    /// beyond (as SciPy's `erfinv`, MLX's `erfinv`).
    erfinv => Erfinv;
}
