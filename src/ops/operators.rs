//! `std::ops` operators on arrays: `+ - * /` and unary `-`. Each returns
//! `Result<Array>` (an op can fail on shapes or dtypes), so write `(&a + &b)?`.
//! Scalars work on either side with the weak typing of [`crate::ops::binary`]: a
//! scalar takes the array's dtype, so `(&a * 2.0)?` keeps an `f32` array `f32`.
//!
//! Operators take one float scalar type (`f64`) and one integer type (`i32`), so a bare
//! literal has exactly one impl to pick: with `f32` impls beside the `f64` ones,
//! `(&a * 2.0)?` needs a type annotation (rustc cannot pick before `?` needs the
//! output type). An `f32` variable goes through the method form, which takes every
//! scalar type: `a.mul(x)?`, or `&a * f64::from(x)`.
//!
//! ```
//! let a = lazuli::Array::from_slice(&[1.0f32, 2.0], &[2])?;
//! let b = (&(&a * 2.0)? + 1)?;
//! let c = (1.0 - &b)?;
//! let x = 0.5f32;
//! let d = c.mul(x)?;
//! assert_eq!(d.to_vec::<f32>()?, vec![-1.0, -2.0]);
//! # Ok::<(), lazuli::Error>(())
//! ```

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
