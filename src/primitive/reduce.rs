//! Reductions: `Reduce` (over axes), `ArgReduce` and `Scan` (along one axis).

use super::table::op_table;
use super::{FusionClass, Meta, Rules, arity, derivatives_not_yet, no_rule};
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
    fn infer(&self, inputs: &[&Meta]) -> Result<Vec<Meta>> {
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
        Ok(vec![Meta::new(shape, x.dtype)])
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::Reduction
    }
    derivatives_not_yet!();
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
    fn infer(&self, inputs: &[&Meta]) -> Result<Vec<Meta>> {
        arity(self.name(), inputs, 1)?;
        let x = inputs[0];
        check_axis(self.name(), self.axis, x.shape.len())?;
        if x.shape[self.axis] == 0 {
            return Err(Error::shape(self.name(), format!("axis {} of shape {:?} is empty", self.axis, x.shape)));
        }
        let mut shape = x.shape.clone();
        shape[self.axis] = 1;
        Ok(vec![Meta::new(shape, DType::U32)])
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::Reduction
    }
    fn vjp(&self, _: &[Array], _: &[Array], _: &[Array]) -> Result<Vec<Option<Array>>> {
        Ok(vec![None])
    }
    fn jvp(&self, _: &[Array], _: &[Option<Array>]) -> Result<Vec<Array>> {
        Err(no_rule(self.name(), "jvp"))
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
    fn infer(&self, inputs: &[&Meta]) -> Result<Vec<Meta>> {
        arity(self.name(), inputs, 1)?;
        check_axis(self.name(), self.axis, inputs[0].shape.len())?;
        Ok(vec![inputs[0].clone()])
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::Reduction
    }
    derivatives_not_yet!();
}
