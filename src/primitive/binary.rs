//! `Binary` (elementwise ops of two inputs) and `Select` (`where`).

use super::table::op_table;
use super::{FusionClass, Meta, Rules, arity, derivatives_not_yet};
use crate::array::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::broadcast_shapes;

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

    fn infer(&self, inputs: &[&Meta]) -> Result<Vec<Meta>> {
        arity(self.name(), inputs, 2)?;
        let (a, b) = (inputs[0], inputs[1]);
        if a.dtype != b.dtype {
            return Err(Error::dtype(self.name(), b.dtype, format!("both inputs must be {} (promote first)", a.dtype)));
        }
        if !self.op.domain().contains(a.dtype) {
            return Err(Error::dtype(self.name(), a.dtype, format!("defined on {}", self.op.domain().describe())));
        }
        let shape = broadcast_shapes(self.name(), &a.shape, &b.shape)?;
        let dtype = if self.op.is_comparison() { DType::Bool } else { a.dtype };
        Ok(vec![Meta::new(shape, dtype)])
    }

    fn fusion_class(&self) -> FusionClass {
        FusionClass::Elementwise
    }

    derivatives_not_yet!();

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

    fn infer(&self, inputs: &[&Meta]) -> Result<Vec<Meta>> {
        arity("where", inputs, 3)?;
        let (c, a, b) = (inputs[0], inputs[1], inputs[2]);
        if c.dtype != DType::Bool {
            return Err(Error::dtype("where", c.dtype, "the condition must be bool"));
        }
        if a.dtype != b.dtype {
            return Err(Error::dtype("where", b.dtype, format!("both branches must be {} (promote first)", a.dtype)));
        }
        let ab = broadcast_shapes("where", &a.shape, &b.shape)?;
        Ok(vec![Meta::new(broadcast_shapes("where", &c.shape, &ab)?, a.dtype)])
    }

    fn fusion_class(&self) -> FusionClass {
        FusionClass::Elementwise
    }

    derivatives_not_yet!();
}
