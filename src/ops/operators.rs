//! `std::ops` operators on arrays: `+ - * /` and unary `-`. Each returns
//! `Result<Array>` (an op can fail on shapes or dtypes), so write `(&a + &b)?`.
//! Scalars (`f64`, `f32`, `i32`) work on either side with the weak typing of
//! [`crate::ops::binary`].

use std::ops::{Add, Div, Mul, Neg, Sub};

use crate::array::Array;
use crate::error::Result;
use crate::ops::binary::{Operand, binary};
use crate::primitive::BinaryOp;

macro_rules! operator {
    ($trait:ident, $method:ident, $op:ident) => {
        operator!(@pair $trait, $method, $op, &Array, &Array);
        operator!(@pair $trait, $method, $op, &Array, Array);
        operator!(@pair $trait, $method, $op, Array, &Array);
        operator!(@pair $trait, $method, $op, Array, Array);
        operator!(@scalar $trait, $method, $op, f64);
        operator!(@scalar $trait, $method, $op, f32);
        operator!(@scalar $trait, $method, $op, i32);
    };
    (@pair $trait:ident, $method:ident, $op:ident, $lhs:ty, $rhs:ty) => {
        impl $trait<$rhs> for $lhs {
            type Output = Result<Array>;
            fn $method(self, rhs: $rhs) -> Result<Array> {
                binary(stringify!($method), BinaryOp::$op, Operand::from(self), Operand::from(rhs))
            }
        }
    };
    (@scalar $trait:ident, $method:ident, $op:ident, $s:ty) => {
        operator!(@pair $trait, $method, $op, &Array, $s);
        operator!(@pair $trait, $method, $op, Array, $s);
        operator!(@pair $trait, $method, $op, $s, &Array);
        operator!(@pair $trait, $method, $op, $s, Array);
    };
}

operator!(Add, add, Add);
operator!(Sub, sub, Sub);
operator!(Mul, mul, Mul);
operator!(Div, div, Div);

impl Neg for &Array {
    type Output = Result<Array>;
    fn neg(self) -> Result<Array> {
        Array::neg(self)
    }
}

impl Neg for Array {
    type Output = Result<Array>;
    fn neg(self) -> Result<Array> {
        Array::neg(&self)
    }
}
