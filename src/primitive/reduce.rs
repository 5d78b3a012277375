//! Reductions: `Reduce` (over axes), `ArgReduce` and `Scan` (along one axis).

use super::table::op_table;
use super::{FusionClass, Gather, Meta, Rules, Scatter, ScatterMode, arity};
use crate::array::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};

op_table! {
    /// Reductions over a set of axes (and the combining step of scans). On bool, sum
    /// and max are `or`, prod and min are `and`.
    pub enum ReduceOp: "REDUCE" {
        /// Sum.
        Sum = 0, "sum", ANY;
        /// Product.
        Prod = 1, "prod", ANY;
        /// Maximum (NaN propagates).
        Max = 2, "max", ANY;
        /// Minimum (NaN propagates).
        Min = 3, "min", ANY;
    }
}

op_table! {
    /// Index-of-extremum reductions along one axis. Output dtype `U32`; ties give the
    /// first index; NaN counts as the extremum.
    pub enum ArgReduceOp: "ARG" {
        /// Index of the maximum.
        ArgMax = 0, "argmax", ANY;
        /// Index of the minimum.
        ArgMin = 1, "argmin", ANY;
    }
}

/// Inclusive scans along one axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScanOp {
    /// Running sum.
    Sum,
    /// Running product.
    Prod,
    /// Running maximum.
    Max,
    /// Running minimum.
    Min,
}

impl ScanOp {
    /// The reduction a scan step applies (kernels combine with it).
    pub fn combine(self) -> ReduceOp {
        match self {
            ScanOp::Sum => ReduceOp::Sum,
            ScanOp::Prod => ReduceOp::Prod,
            ScanOp::Max => ReduceOp::Max,
            ScanOp::Min => ReduceOp::Min,
        }
    }
    /// The op's name ("cumsum").
    pub fn name(self) -> &'static str {
        match self {
            ScanOp::Sum => "cumsum",
            ScanOp::Prod => "cumprod",
            ScanOp::Max => "cummax",
            ScanOp::Min => "cummin",
        }
    }
}

fn check_axis(op: &'static str, axis: usize, ndim: usize) -> Result<()> {
    if axis >= ndim {
        return Err(Error::Axis { op, axis: axis as isize, ndim });
    }
    Ok(())
}

impl Reduce {
    /// `dy/dx` in `x`'s shape for prod, max and min (`y` keeps the reduced axes).
    /// Max and min share the gradient evenly among tied extrema. Prod is exact with
    /// zeros: the product of the other elements, which is `y / x` without zeros, the
    /// product of the non-zeros at a lone zero, and 0 everywhere when two or more are 0.
    fn partial(&self, x: &Array, y: &Array) -> Result<Array> {
        let axes: Vec<isize> = self.axes.iter().map(|&a| a as isize).collect();
        match self.op {
            ReduceOp::Sum => crate::full(x.shape(), 1.0, x.dtype()),
            ReduceOp::Max | ReduceOp::Min => {
                let hit = x.eq(y)?.astype(x.dtype())?;
                hit.div(&hit.sum(&axes, true)?)
            }
            ReduceOp::Prod => {
                let zero = x.eq(0.0)?;
                let zeros = zero.astype(x.dtype())?.sum(&axes, true)?;
                let others = crate::where_(&zero, 1.0, x)?.prod(&axes, true)?;
                let lone = crate::where_(&zero, &others.broadcast_to(x.shape())?, 0.0)?;
                let none = y.div(&crate::where_(&zero, 1.0, x)?)?;
                let d = crate::where_(&zeros.eq(0.0)?, &none, &crate::where_(&zeros.eq(1.0)?, &lone, 0.0)?)?;
                d.broadcast_to(x.shape())
            }
        }
    }
}

/// Reduction over `axes` (sorted, distinct); the output keeps them with size 1.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reduce {
    /// The reduction.
    pub op: ReduceOp,
    /// Axes to reduce.
    pub axes: Vec<usize>,
}

impl Rules for Reduce {
    fn name(&self) -> &'static str {
        self.op.name()
    }
    fn infer(&self, inputs: &[&Meta]) -> Result<Meta> {
        arity(self.name(), inputs, 1)?;
        let x = inputs[0];
        let mut shape = x.shape.clone();
        for (i, &a) in self.axes.iter().enumerate() {
            check_axis(self.name(), a, x.shape.len())?;
            if i > 0 && self.axes[i - 1] >= a {
                return Err(Error::invalid(self.name(), format!("axes {:?} must be sorted and distinct", self.axes)));
            }
            shape[a] = 1;
        }
        Ok(Meta::new(shape, x.dtype))
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::Reduction
    }
    fn vjp(&self, primals: &[Array], output: &Array, cotangent: &Array) -> Result<Vec<Option<Array>>> {
        let x = &primals[0];
        if !x.dtype().is_float() {
            return Ok(vec![None]);
        }
        let g = cotangent.broadcast_to(x.shape())?;
        Ok(vec![Some(match self.op {
            ReduceOp::Sum => g,
            ReduceOp::Prod | ReduceOp::Max | ReduceOp::Min => g.mul(&self.partial(x, output)?)?,
        })])
    }
    fn jvp(&self, primals: &[Array], output: &Array, tangents: &[Option<Array>]) -> Result<Option<Array>> {
        let (x, Some(t)) = (&primals[0], &tangents[0]) else { return Ok(None) };
        if !x.dtype().is_float() {
            return Ok(None);
        }
        let t = match self.op {
            ReduceOp::Sum => t.clone(),
            ReduceOp::Prod | ReduceOp::Max | ReduceOp::Min => t.mul(&self.partial(x, output)?)?,
        };
        Ok(Some(Array::from_op(Reduce { op: ReduceOp::Sum, axes: self.axes.clone() }, [t])?))
    }
}

/// Index of the extremum along `axis`; the output keeps it with size 1, dtype `U32`.
/// The axis must not be empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArgReduce {
    /// Which extremum.
    pub op: ArgReduceOp,
    /// The axis.
    pub axis: usize,
}

impl Rules for ArgReduce {
    fn name(&self) -> &'static str {
        self.op.name()
    }
    fn infer(&self, inputs: &[&Meta]) -> Result<Meta> {
        arity(self.name(), inputs, 1)?;
        let x = inputs[0];
        check_axis(self.name(), self.axis, x.shape.len())?;
        if x.shape[self.axis] == 0 {
            return Err(Error::shape(self.name(), format!("axis {} of shape {:?} is empty", self.axis, x.shape)));
        }
        let mut shape = x.shape.clone();
        shape[self.axis] = 1;
        Ok(Meta::new(shape, DType::U32))
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::Reduction
    }
    /// Indices have no gradient.
    fn vjp(&self, _: &[Array], _: &Array, _: &Array) -> Result<Vec<Option<Array>>> {
        Ok(vec![None])
    }
    fn jvp(&self, _: &[Array], _: &Array, _: &[Option<Array>]) -> Result<Option<Array>> {
        Ok(None)
    }
}

impl Scan {
    /// A running sum of `g` in the opposite direction.
    fn flipped(&self, g: &Array) -> Result<Array> {
        Array::from_op(Scan { op: ScanOp::Sum, axis: self.axis, reverse: !self.reverse }, [g.clone()])
    }

    /// For a running max or min `y` of `x`: for each output, the index along the axis
    /// (`I32`) of the input it equals, the latest one the scan has reached.
    fn sources(&self, x: &Array, y: &Array) -> Result<Array> {
        let n = x.shape()[self.axis];
        if n > i32::MAX as usize {
            return Err(Error::unsupported("transforms", format!("a scan of length {n} needs 64-bit indices")));
        }
        let mut along = vec![1; x.ndim()];
        along[self.axis] = n;
        let iota = crate::arange(0.0, n as f64, 1.0, DType::I32)?.reshape_to(along)?.broadcast_to(x.shape())?;
        let (fill, op) = if self.reverse { ((n - 1) as i64, ScanOp::Min) } else { (0, ScanOp::Max) };
        let at = crate::where_(&x.eq(y)?, &iota, fill)?;
        Array::from_op(Scan { op, axis: self.axis, reverse: self.reverse }, [at])
    }
}

/// Inclusive scan along `axis`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Scan {
    /// The scan.
    pub op: ScanOp,
    /// The axis.
    pub axis: usize,
    /// Scan from the end.
    pub reverse: bool,
}

impl Rules for Scan {
    fn name(&self) -> &'static str {
        self.op.name()
    }
    fn infer(&self, inputs: &[&Meta]) -> Result<Meta> {
        arity(self.name(), inputs, 1)?;
        check_axis(self.name(), self.axis, inputs[0].shape.len())?;
        Ok(inputs[0].clone())
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::Reduction
    }
    fn vjp(&self, primals: &[Array], output: &Array, cotangent: &Array) -> Result<Vec<Option<Array>>> {
        let x = &primals[0];
        if !x.dtype().is_float() {
            return Ok(vec![None]);
        }
        let g = cotangent;
        Ok(vec![Some(match self.op {
            // Each input adds into every later (earlier, reversed) output: a scan the other way.
            ScanOp::Sum => self.flipped(g)?,
            // y_i = prod_{j<=i} x_j: dy_i/dx_k = y_i / x_k. Not defined at zeros of x.
            ScanOp::Prod => self.flipped(&g.mul(output)?)?.div(x)?,
            ScanOp::Max | ScanOp::Min => {
                let src = self.sources(x, output)?;
                let zeros = x.zeros_like()?;
                Array::from_op(Scatter { axis: self.axis, mode: ScatterMode::Add }, [zeros, src, g.clone()])?
            }
        })])
    }
    fn jvp(&self, primals: &[Array], output: &Array, tangents: &[Option<Array>]) -> Result<Option<Array>> {
        let (x, Some(t)) = (&primals[0], &tangents[0]) else { return Ok(None) };
        if !x.dtype().is_float() {
            return Ok(None);
        }
        let sum = Scan { op: ScanOp::Sum, ..*self };
        Ok(Some(match self.op {
            ScanOp::Sum => Array::from_op(sum, [t.clone()])?,
            ScanOp::Prod => Array::from_op(sum, [t.div(x)?])?.mul(output)?,
            ScanOp::Max | ScanOp::Min => {
                Array::from_op(Gather { axis: self.axis }, [t.clone(), self.sources(x, output)?])?
            }
        }))
    }
}
