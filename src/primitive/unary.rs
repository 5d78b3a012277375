//! `Unary`: elementwise ops of one input.

use super::table::op_table;
use super::{FusionClass, Meta, Rules, arity};
use crate::array::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};

op_table! {
    /// Elementwise ops of one input. The output dtype is the input's, except the
    /// predicates (`isnan`, `isinf`, `logical_not`), which give bool.
    pub enum UnaryOp: "UNARY" {
        /// `-x`; unsigned integers wrap.
        Neg = 0, "neg", NUM;
        /// `|x|`.
        Abs = 1, "abs", SIGNED;
        /// -1, 0 or 1 (NaN stays NaN).
        Sign = 2, "sign", NUM;
        /// `x * x`.
        Square = 3, "square", NUM;
        /// Largest integer not above `x`.
        Floor = 4, "floor", FLOAT;
        /// Smallest integer not below `x`.
        Ceil = 5, "ceil", FLOAT;
        /// Round half to even, as NumPy.
        Round = 6, "round", FLOAT;
        /// `e^x`.
        Exp = 7, "exp", FLOAT;
        /// `e^x - 1`.
        Expm1 = 8, "expm1", FLOAT;
        /// Natural logarithm.
        Log = 9, "log", FLOAT;
        /// `ln(1 + x)`.
        Log1p = 10, "log1p", FLOAT;
        /// Base-2 logarithm.
        Log2 = 11, "log2", FLOAT;
        /// Square root.
        Sqrt = 12, "sqrt", FLOAT;
        /// `1 / sqrt(x)`.
        Rsqrt = 13, "rsqrt", FLOAT;
        /// `1 / x`.
        Reciprocal = 14, "reciprocal", FLOAT;
        /// Sine.
        Sin = 15, "sin", FLOAT;
        /// Cosine.
        Cos = 16, "cos", FLOAT;
        /// Tangent.
        Tan = 17, "tan", FLOAT;
        /// Hyperbolic tangent.
        Tanh = 18, "tanh", FLOAT;
        /// Logistic sigmoid.
        Sigmoid = 19, "sigmoid", FLOAT;
        /// Gauss error function.
        Erf = 20, "erf", FLOAT;
        /// NaN test; output bool.
        IsNan = 21, "isnan", FLOAT;
        /// Infinity test; output bool.
        IsInf = 22, "isinf", FLOAT;
        /// Logical not of bool.
        LogicalNot = 23, "logical_not", BOOL;
        /// Inverse error function: `erf(erfinv(x)) = x` on (-1, 1), ±inf at ±1, NaN outside.
        Erfinv = 24, "erfinv", FLOAT;
    }
}

impl UnaryOp {
    /// True for ops defined on floats only.
    pub fn float_only(self) -> bool {
        self.domain() == super::Domain::FLOAT
    }
    /// True for ops whose output is bool.
    pub fn is_predicate(self) -> bool {
        matches!(self, UnaryOp::IsNan | UnaryOp::IsInf | UnaryOp::LogicalNot)
    }
}

impl Unary {
    /// `g * f'(x)` for `y = f(x)`: the vjp and the jvp of an elementwise op of one input
    /// are the same product. `None` where the derivative is zero (piecewise-constant ops)
    /// or undefined (bool outputs, integer inputs).
    fn chain(&self, x: &Array, y: &Array, g: &Array) -> Result<Option<Array>> {
        use UnaryOp::*;
        use std::f64::consts::{LN_2, PI};
        if !x.dtype().is_float() || !y.dtype().is_float() {
            return Ok(None);
        }
        let one_minus = |a: &Array| a.mul(-1.0)?.add(1.0);
        let d = match self.op {
            Neg => return Ok(Some(g.neg()?)),
            Abs => x.sign()?,
            Sign | Floor | Ceil | Round | IsNan | IsInf | LogicalNot => return Ok(None),
            Square => x.mul(2.0)?,
            Exp => y.clone(),
            Expm1 => y.add(1.0)?,
            Log => return Ok(Some(g.div(x)?)),
            Log1p => return Ok(Some(g.div(&x.add(1.0)?)?)),
            Log2 => return Ok(Some(g.div(&x.mul(LN_2)?)?)),
            Sqrt => return Ok(Some(g.div(&y.mul(2.0)?)?)),
            // d/dx x^(-1/2) = -y / (2x).
            Rsqrt => y.div(x)?.mul(-0.5)?,
            Reciprocal => y.square()?.neg()?,
            Sin => x.cos()?,
            Cos => x.sin()?.neg()?,
            Tan => y.square()?.add(1.0)?,
            Tanh => one_minus(&y.square()?)?,
            Sigmoid => y.mul(&one_minus(y)?)?,
            Erf => x.square()?.neg()?.exp()?.mul(2.0 / PI.sqrt())?,
            // erf'(y) = 2/sqrt(pi) e^(-y^2), so erfinv'(x) = sqrt(pi)/2 e^(y^2).
            Erfinv => y.square()?.exp()?.mul(PI.sqrt() / 2.0)?,
        };
        Ok(Some(g.mul(&d)?))
    }
}

/// One input, same shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Unary {
    /// The op.
    pub op: UnaryOp,
}

impl Rules for Unary {
    fn name(&self) -> &'static str {
        self.op.name()
    }

    fn infer(&self, inputs: &[&Meta]) -> Result<Meta> {
        arity(self.name(), inputs, 1)?;
        let x = inputs[0];
        if !self.op.domain().contains(x.dtype) {
            return Err(Error::dtype(self.name(), x.dtype, format!("defined on {}", self.op.domain().describe())));
        }
        let dtype = if self.op.is_predicate() { DType::Bool } else { x.dtype };
        Ok(Meta::new(x.shape.clone(), dtype))
    }

    fn fusion_class(&self) -> FusionClass {
        FusionClass::Elementwise
    }

    fn vjp(&self, primals: &[Array], output: &Array, cotangent: &Array) -> Result<Vec<Option<Array>>> {
        Ok(vec![self.chain(&primals[0], output, cotangent)?])
    }

    fn jvp(&self, primals: &[Array], output: &Array, tangents: &[Option<Array>]) -> Result<Option<Array>> {
        match &tangents[0] {
            Some(t) => self.chain(&primals[0], output, t),
            None => Ok(None),
        }
    }

    /// Ops with an exact or standard formula in simpler primitives (full, add, mul, div,
    /// exp, log, sqrt, sin, cos, comparisons, select).
    fn decompose(&self, inputs: &[Array]) -> Option<Result<Vec<Array>>> {
        use UnaryOp::*;
        let x = inputs.first()?;
        let signed = x.dtype() != DType::U32;
        let one = || crate::full(&[], 1.0, x.dtype());
        let r = match self.op {
            // 0 - x wraps for integers; floats multiply by -1 so that -(0.0) is -0.0.
            Neg if x.dtype().is_float() => x.mul(-1),
            Neg => crate::full(&[], 0.0, x.dtype()).and_then(|z| z.sub(x)),
            Square => x.mul(x),
            // 0 - x where x <= 0, so that abs(-0.0) is +0.0.
            Abs => (|| crate::where_(&x.le(0)?, crate::full(&[], 0.0, x.dtype())?.sub(x)?, x))(),
            Sign if signed => (|| crate::where_(&x.gt(0)?, 1, &crate::where_(&x.lt(0)?, -1, x)?))(),
            Sign => x.gt(0).and_then(|pos| crate::where_(&pos, 1, x)),
            // Kahan's forms: accurate near 0, where exp(x) - 1 and log(1 + x) cancel; the
            // ends (u = 1, u = inf) are taken exactly.
            Expm1 => (|| {
                let u = x.exp()?;
                let um1 = u.add(-1.0)?;
                let mid = um1.mul(x)?.div(&u.log()?)?;
                let mid = crate::where_(&u.eq(f64::INFINITY)?, f64::INFINITY, &mid)?;
                let mid = crate::where_(&um1.eq(-1.0)?, -1.0, &mid)?;
                crate::where_(&u.eq(1.0)?, x, &mid)
            })(),
            Log1p => (|| {
                let u = x.add(1.0)?;
                let mid = u.log()?.mul(x)?.div(&u.add(-1.0)?)?;
                let mid = crate::where_(&u.eq(f64::INFINITY)?, &u.log()?, &mid)?;
                crate::where_(&u.eq(1.0)?, x, &mid)
            })(),
            Log2 => x.log().and_then(|y| y.mul(std::f64::consts::LOG2_E)),
            Rsqrt => x.sqrt().and_then(|y| y.reciprocal()),
            Reciprocal => one().and_then(|o| o.div(x)),
            Tan => (|| x.sin()?.div(&x.cos()?))(),
            // expm1(2x) / (expm1(2x) + 2) near 0 (no cancellation); 1 - 2 / (e^2x + 1)
            // beyond, whose limits are exactly ±1 where e^2x overflows or vanishes.
            Tanh => (|| {
                let far = one()?.sub(&x.mul(2.0)?.exp()?.add(1.0)?.reciprocal()?.mul(2.0)?)?;
                let em = x.mul(2.0)?.expm1()?;
                let near = em.div(&em.add(2.0)?)?;
                crate::where_(&x.abs()?.lt(1.0)?, &near, &far)
            })(),
            Sigmoid => (|| x.mul(-1.0)?.exp()?.add(1.0)?.reciprocal())(),
            Floor | Ceil | Round | Exp | Log | Sqrt | Sin | Cos | Erf | Erfinv | IsNan | IsInf | LogicalNot => {
                return None;
            }
        };
        Some(r.map(|a| vec![a]))
    }
}
