//! `Binary` (elementwise ops of two inputs) and `Select` (`where`).

use super::calculus::{add_opt, broadcast_opt};
use super::table::op_table;
use super::{FusionClass, Meta, Partial, Rules, arity, unbroadcast};
use crate::array::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::broadcast_shape;

op_table! {
    /// Elementwise ops of two inputs of one dtype (the op layer promotes first).
    pub enum BinaryOp: "BINARY" {
        /// `a + b`; integers wrap.
        Add = 0, "add", NUM;
        /// `a - b`; integers wrap.
        Sub = 1, "sub", NUM;
        /// `a * b`; integers wrap.
        Mul = 2, "mul", NUM;
        /// True division (floats only: the op layer converts integers).
        Div = 3, "div", FLOAT;
        /// `a ** b`.
        Pow = 4, "pow", NUM;
        /// Remainder whose sign follows the divisor, as NumPy's `remainder`.
        Remainder = 5, "remainder", NUM;
        /// Division rounded toward negative infinity.
        FloorDivide = 6, "floor_divide", NUM;
        /// Elementwise maximum.
        Maximum = 7, "maximum", NUM;
        /// Elementwise minimum.
        Minimum = 8, "minimum", NUM;
        /// `a == b`; output bool.
        Eq = 9, "eq", ANY;
        /// `a != b`; output bool.
        Ne = 10, "ne", ANY;
        /// `a < b`; output bool.
        Lt = 11, "lt", ANY;
        /// `a <= b`; output bool.
        Le = 12, "le", ANY;
        /// `a > b`; output bool.
        Gt = 13, "gt", ANY;
        /// `a >= b`; output bool.
        Ge = 14, "ge", ANY;
        /// Logical and of bools.
        LogicalAnd = 15, "logical_and", BOOL;
        /// Logical or of bools.
        LogicalOr = 16, "logical_or", BOOL;
        /// Logical exclusive or of bools.
        LogicalXor = 17, "logical_xor", BOOL;
        /// `atan2(a, b)`: the angle of the point `(b, a)`, in `[-pi, pi]`, as C's `atan2`.
        Atan2 = 18, "atan2", FLOAT;
    }
}

impl BinaryOp {
    /// True for ops whose output is bool.
    pub fn is_comparison(self) -> bool {
        use BinaryOp::*;
        matches!(self, Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor)
    }
}

impl Binary {
    /// `(dy/da, dy/db)` for `y = op(a, b)`, elementwise in the output's shape.
    fn partials(&self, a: &Array, b: &Array, y: &Array) -> Result<(Partial, Partial)> {
        use BinaryOp::*;
        use Partial::*;
        if !y.dtype().is_float() {
            return Ok((Zero, Zero));
        }
        Ok(match self.op {
            Add => (Scale(1.0), Scale(1.0)),
            Sub => (Scale(1.0), Scale(-1.0)),
            Mul => (Times(b.clone()), Times(a.clone())),
            Div => (Over(b.clone()), Times(y.div(b)?.neg()?)),
            // b a^(b-1), taken as 0 where b = 0 (so 0^0 has slope 0, not NaN); y ln a,
            // taken as 0 where a = 0 (y is 0 or 1 there, and the limit is 0 for b > 0).
            Pow => {
                let da = crate::where_(&b.eq(0.0)?, 0.0, &b.mul(&a.pow(&b.add(-1.0)?)?)?)?;
                let safe_a = crate::where_(&a.eq(0.0)?, 1.0, a)?;
                (Times(da), Times(y.mul(&safe_a.log()?)?))
            }
            // a - b floor(a / b): slope 1 in a and -floor(a / b) in b, away from the jumps.
            Remainder => (Scale(1.0), Times(a.floor_divide(b)?.neg()?)),
            FloorDivide => (Zero, Zero),
            // The larger input takes the gradient; a tie gives it to `a`.
            Maximum => {
                let pick = a.ge(b)?;
                (Times(pick.astype(y.dtype())?), Times(pick.logical_not()?.astype(y.dtype())?))
            }
            Minimum => {
                let pick = a.le(b)?;
                (Times(pick.astype(y.dtype())?), Times(pick.logical_not()?.astype(y.dtype())?))
            }
            Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor => (Zero, Zero),
            // atan2(a, b) = angle of (b, a): d/da = b / r^2, d/db = -a / r^2.
            Atan2 => {
                let r2 = a.square()?.add(&b.square()?)?;
                (Times(b.div(&r2)?), Times(a.div(&r2)?.neg()?))
            }
        })
    }
}

/// Two inputs of one dtype, broadcast to the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Binary {
    /// The op.
    pub op: BinaryOp,
}

impl Rules for Binary {
    fn name(&self) -> &'static str {
        self.op.name()
    }

    fn infer(&self, inputs: &[&Meta]) -> Result<Meta> {
        arity(self.name(), inputs, 2)?;
        let (a, b) = (inputs[0], inputs[1]);
        if a.dtype != b.dtype {
            return Err(Error::dtype(self.name(), b.dtype, format!("both inputs must be {} (promote first)", a.dtype)));
        }
        if !self.op.domain().contains(a.dtype) {
            return Err(Error::dtype(self.name(), a.dtype, format!("defined on {}", self.op.domain().describe())));
        }
        let shape = broadcast_shape(self.name(), &a.shape, &b.shape)?;
        let dtype = if self.op.is_comparison() { DType::Bool } else { a.dtype };
        Ok(Meta { shape, dtype })
    }

    fn fusion_class(&self) -> FusionClass {
        FusionClass::Elementwise
    }

    fn vjp(&self, primals: &[Array], output: &Array, cotangent: &Array) -> Result<Vec<Option<Array>>> {
        let (da, db) = self.partials(&primals[0], &primals[1], output)?;
        let ga = da.apply(cotangent)?.map(|g| unbroadcast(&g, primals[0].shape())).transpose()?;
        let gb = db.apply(cotangent)?.map(|g| unbroadcast(&g, primals[1].shape())).transpose()?;
        Ok(vec![ga, gb])
    }

    fn jvp(&self, primals: &[Array], output: &Array, tangents: &[Option<Array>]) -> Result<Option<Array>> {
        let (da, db) = self.partials(&primals[0], &primals[1], output)?;
        let ta = tangents[0].as_ref().map(|t| da.apply(t)).transpose()?.flatten();
        let tb = tangents[1].as_ref().map(|t| db.apply(t)).transpose()?.flatten();
        broadcast_opt(add_opt(ta, tb)?, output.shape())
    }

    /// Ops with an exact formula in add, mul, comparisons `<`/`==`, logic and select.
    fn decompose(&self, inputs: &[Array]) -> Option<Result<Vec<Array>>> {
        use BinaryOp::*;
        let (a, b) = (inputs.first()?, inputs.get(1)?);
        let signed = a.dtype() != DType::U32;
        let r = match self.op {
            Sub if signed && !a.dtype().is_float() => b.mul(-1).and_then(|nb| a.add(&nb)),
            // a + (-1 * b) is exact in floats too (negation is exact).
            Sub if signed => b.mul(-1.0).and_then(|nb| a.add(&nb)),
            // NaN propagates from either side, as the kernels do.
            Maximum => (|| crate::where_(&a.ge(b)?.logical_or(&a.ne(a)?)?, a, b))(),
            Minimum => (|| crate::where_(&a.le(b)?.logical_or(&a.ne(a)?)?, a, b))(),
            Ne => a.eq(b).and_then(|e| e.logical_not()),
            Gt => b.lt(a),
            Ge => b.le(a),
            Le => (|| a.lt(b)?.logical_or(&a.eq(b)?))(),
            Sub | Add | Mul | Div | Pow | Remainder | FloorDivide | Eq | Lt | LogicalAnd | LogicalOr | LogicalXor
            | Atan2 => return None,
        };
        Some(r.map(|x| vec![x]))
    }
}

/// `where(cond, a, b)`: inputs bool, T, T, broadcast to the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Select;

impl Rules for Select {
    fn name(&self) -> &'static str {
        "where"
    }

    fn infer(&self, inputs: &[&Meta]) -> Result<Meta> {
        arity("where", inputs, 3)?;
        let (c, a, b) = (inputs[0], inputs[1], inputs[2]);
        if c.dtype != DType::Bool {
            return Err(Error::dtype("where", c.dtype, "the condition must be bool"));
        }
        if a.dtype != b.dtype {
            return Err(Error::dtype("where", b.dtype, format!("both branches must be {} (promote first)", a.dtype)));
        }
        let ab = broadcast_shape("where", &a.shape, &b.shape)?;
        Ok(Meta { shape: broadcast_shape("where", &c.shape, &ab)?, dtype: a.dtype })
    }

    fn fusion_class(&self) -> FusionClass {
        FusionClass::Elementwise
    }

    fn vjp(&self, primals: &[Array], _: &Array, cotangent: &Array) -> Result<Vec<Option<Array>>> {
        let (c, a, b) = (&primals[0], &primals[1], &primals[2]);
        if !a.dtype().is_float() {
            return Ok(vec![None, None, None]);
        }
        let ga = crate::where_(c, cotangent, 0.0)?;
        let gb = crate::where_(c, 0.0, cotangent)?;
        Ok(vec![None, Some(unbroadcast(&ga, a.shape())?), Some(unbroadcast(&gb, b.shape())?)])
    }

    fn jvp(&self, primals: &[Array], output: &Array, tangents: &[Option<Array>]) -> Result<Option<Array>> {
        if !output.dtype().is_float() || (tangents[1].is_none() && tangents[2].is_none()) {
            return Ok(None);
        }
        let zero = || crate::full(&[], 0.0, output.dtype());
        let ta = tangents[1].clone().map(Ok).unwrap_or_else(zero)?;
        let tb = tangents[2].clone().map(Ok).unwrap_or_else(zero)?;
        broadcast_opt(Some(crate::where_(&primals[0], &ta, &tb)?), output.shape())
    }
}
