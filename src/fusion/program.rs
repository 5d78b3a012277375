//! What a fused region computes: SSA steps over its inputs, at one shape.

use std::fmt;

use crate::dtype::DType;
use crate::primitive::{BinaryOp, Meta, Primitive, ReduceOp, UnaryOp};

/// One value of a region, computed from earlier values (by index into
/// [`Program::steps`]) at every element of [`Program::shape`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// Region input `k`, read with broadcast strides (see [`Program::inputs`]).
    Input(usize),
    /// A constant (a `Full` node folded in), in the value's dtype.
    Const(f64),
    /// An elementwise unary primitive.
    Unary(UnaryOp, usize),
    /// An elementwise binary primitive (comparisons give bool).
    Binary(BinaryOp, usize, usize),
    /// `where(cond, a, b)`.
    Select(usize, usize, usize),
    /// Conversion to the step's dtype.
    Cast(usize),
}

/// A reduction the region ends in: its last value reduced over `axes` (kept as size 1).
#[derive(Debug, Clone, PartialEq)]
pub struct Reduction {
    /// The reduction.
    pub op: ReduceOp,
    /// The reduced axes of [`Program::shape`], sorted.
    pub axes: Vec<usize>,
}

/// A fused region as a backend compiles it.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// The shape every step computes at.
    pub shape: Vec<usize>,
    /// The region's inputs (contiguous buffers), each broadcastable to `shape`.
    pub inputs: Vec<Meta>,
    /// The values, in order, each with its dtype; every operand comes earlier.
    pub steps: Vec<(Step, DType)>,
    /// The value written out, or reduced when there is a reduction.
    pub result: usize,
    /// When the region's root is a reduction: the last value is reduced by it.
    pub reduction: Option<Reduction>,
    /// The main output: the result, or its reduction.
    pub output: Meta,
    /// Values also written out, each as an output of [`Program::shape`] in its step's
    /// dtype, after the main one: members something outside the region still holds (a
    /// user handle, a node not being evaluated), so the region fuses through them instead
    /// of stopping there. Empty when there is a reduction.
    pub extra_outputs: Vec<usize>,
}

impl Program {
    /// Number of primitives the region stands for (constants included): what it saves
    /// over running them one by one.
    pub fn primitives(&self) -> usize {
        self.steps.iter().filter(|(s, _)| !matches!(s, Step::Input(_))).count() + usize::from(self.reduction.is_some())
    }
}

impl Step {
    /// True if `op` with `inputs` operands is a step ([`Step::of`] without the indices).
    pub(crate) fn fits(op: &Primitive, inputs: usize) -> bool {
        // No step takes more than three operands.
        inputs <= 3 && Step::of(op, &[0; 3][..inputs]).is_some()
    }

    /// The step a primitive is in a region, with its operands' value indices; `None` for
    /// primitives that are not elementwise (they never join a region). `Full` becomes a
    /// constant and takes no operands.
    pub(crate) fn of(op: &Primitive, args: &[usize]) -> Option<Step> {
        match (op, args) {
            (Primitive::Full(f), []) => Some(Step::Const(f.value)),
            (Primitive::Unary(u), [a]) => Some(Step::Unary(u.op, *a)),
            (Primitive::Binary(b), [x, y]) => Some(Step::Binary(b.op, *x, *y)),
            (Primitive::Select(_), [c, x, y]) => Some(Step::Select(*c, *x, *y)),
            (Primitive::AsType(_), [a]) => Some(Step::Cast(*a)),
            (
                Primitive::Full(_)
                | Primitive::Unary(_)
                | Primitive::Binary(_)
                | Primitive::Select(_)
                | Primitive::AsType(_)
                | Primitive::Arange(_)
                | Primitive::RandomBits(_)
                | Primitive::Reshape(_)
                | Primitive::AsStrided(_)
                | Primitive::Copy(_)
                | Primitive::Reduce(_)
                | Primitive::ArgReduce(_)
                | Primitive::Scan(_)
                | Primitive::Concatenate(_)
                | Primitive::Gather(_)
                | Primitive::Scatter(_)
                | Primitive::Matmul(_)
                | Primitive::Marker(_),
                _,
            ) => None,
        }
    }
}

impl fmt::Display for Program {
    /// One line per value, as `LAZULI_DEBUG_FUSION` prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "region of {} primitives at {:?} -> {}{:?}",
            self.primitives(),
            self.shape,
            self.output.dtype,
            self.output.shape
        )?;
        for (i, (s, d)) in self.steps.iter().enumerate() {
            write!(f, "\n  v{i}: {d} = ")?;
            match s {
                Step::Input(k) => write!(f, "input {k} {:?}", self.inputs[*k].shape)?,
                Step::Const(c) => write!(f, "{c:?}")?,
                Step::Unary(op, a) => write!(f, "{}(v{a})", op.name())?,
                Step::Binary(op, a, b) => write!(f, "{}(v{a}, v{b})", op.name())?,
                Step::Select(c, a, b) => write!(f, "where(v{c}, v{a}, v{b})")?,
                Step::Cast(a) => write!(f, "astype(v{a})")?,
            }
        }
        if let Some(r) = &self.reduction {
            write!(f, "\n  out = {}(v{}, axes {:?})", r.op.name(), self.result, r.axes)?;
        } else {
            write!(f, "\n  out = v{}", self.result)?;
        }
        for (k, v) in self.extra_outputs.iter().enumerate() {
            write!(f, "\n  out{} = v{v}", k + 1)?;
        }
        Ok(())
    }
}
