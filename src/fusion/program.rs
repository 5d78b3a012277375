//! What a fused region computes: SSA steps over its inputs, at one shape.

use std::fmt;
use std::hash::{Hash, Hasher};

use arrayvec::ArrayVec;

use crate::dtype::DType;
use crate::primitive::{BinaryOp, Meta, Primitive, ReduceOp, UnaryOp};

/// One value of a region, computed from earlier values (by index into
/// [`Program::steps`]) at every element of [`Program::shape`].
///
/// Equality and hashing compare constants bit for bit (`0.0` and `-0.0` differ, a NaN
/// equals itself), so a program is a key: equal programs compile to the same kernel.
#[derive(Debug, Clone, Copy)]
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
    /// A value reduced over [`Program::reduce_axes`]: the same at every element of a row
    /// (`max` and `sum` of a softmax). Steps that read it run after the whole row is
    /// reduced, so a backend runs such a program row by row, one pass over the row per
    /// level of reductions.
    Reduce(ReduceOp, usize),
}

/// [`Step`] with its constant as bits: what equality and hashing compare.
#[derive(PartialEq, Eq, Hash)]
enum StepBits {
    Input(usize),
    Const(u64),
    Unary(UnaryOp, usize),
    Binary(BinaryOp, usize, usize),
    Select(usize, usize, usize),
    Cast(usize),
    Reduce(ReduceOp, usize),
}

impl Step {
    fn bits(self) -> StepBits {
        match self {
            Step::Input(k) => StepBits::Input(k),
            Step::Const(c) => StepBits::Const(c.to_bits()),
            Step::Unary(op, a) => StepBits::Unary(op, a),
            Step::Binary(op, a, b) => StepBits::Binary(op, a, b),
            Step::Select(c, a, b) => StepBits::Select(c, a, b),
            Step::Cast(a) => StepBits::Cast(a),
            Step::Reduce(op, a) => StepBits::Reduce(op, a),
        }
    }
}

impl PartialEq for Step {
    fn eq(&self, other: &Step) -> bool {
        self.bits() == other.bits()
    }
}

impl Eq for Step {}

impl Hash for Step {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.bits().hash(state);
    }
}

/// A fused region as a backend compiles it. Equal programs (constants compared bit for
/// bit) compile to the same kernel: backends may cache by the program.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Program {
    /// The shape every step computes at.
    pub shape: Vec<usize>,
    /// The region's inputs (contiguous buffers), each broadcastable to `shape`.
    pub inputs: Vec<Meta>,
    /// The values, in order, each with its dtype; every operand comes earlier.
    pub steps: Vec<(Step, DType)>,
    /// The value written out, or reduced when there is a reduction.
    pub result: usize,
    /// When the region's root is a reduction: `result` is reduced by it, over
    /// [`Program::reduce_axes`].
    pub reduction: Option<ReduceOp>,
    /// The axes the root reduction and every [`Step::Reduce`] reduce over, sorted (kept as
    /// size 1 in their results); empty when the program reduces nothing. Every value is
    /// either at `shape` or broadcasts to it.
    pub reduce_axes: Vec<usize>,
    /// The main output: the result, or its reduction.
    pub output: Meta,
    /// Values also written out, each as an output of [`Program::shape`] in its step's
    /// dtype, after the main one: members something outside the region still holds (a
    /// user handle, a node not being evaluated), so the region fuses through them instead
    /// of stopping there. Empty when there is a reduction.
    pub extra_outputs: Vec<usize>,
}

impl Program {
    /// True if the program reduces (at its root or in a step): a backend runs it row by
    /// row over [`Program::reduce_axes`].
    pub fn reduces(&self) -> bool {
        self.reduction.is_some() || self.reduces_inside()
    }

    /// True if a [`Step::Reduce`] is among the steps (a row region's).
    pub fn reduces_inside(&self) -> bool {
        self.steps.iter().any(|(s, _)| matches!(s, Step::Reduce(..)))
    }

    /// Number of primitives the region computes (constants included; identical ones are
    /// one step): what it saves over running them one by one.
    pub fn primitives(&self) -> usize {
        self.steps.iter().filter(|(s, _)| !matches!(s, Step::Input(_))).count() + usize::from(self.reduction.is_some())
    }
}

impl Step {
    /// The value indices the step reads.
    pub fn operands(self) -> Vec<usize> {
        self.args().to_vec()
    }

    /// [`Step::operands`] on the stack: the CPU's interpreter and the GPU's pass planner
    /// ask this of every step of every region.
    pub(crate) fn args(self) -> ArrayVec<usize, 3> {
        match self {
            Step::Input(_) | Step::Const(_) => ArrayVec::new(),
            Step::Unary(_, a) | Step::Cast(a) | Step::Reduce(_, a) => [a].into_iter().collect(),
            Step::Binary(_, a, b) => [a, b].into_iter().collect(),
            Step::Select(c, a, b) => [c, a, b].into_iter().collect(),
        }
    }

    /// This step reading `args` instead (as many as it reads); `None` if their number
    /// differs. The planner keeps each member as its step with unnumbered operands (no
    /// clone of the primitive per member) and numbers them when it writes the program.
    pub(crate) fn with_args(self, args: &[usize]) -> Option<Step> {
        match (self, args) {
            (Step::Input(k), []) => Some(Step::Input(k)),
            (Step::Const(c), []) => Some(Step::Const(c)),
            (Step::Unary(op, _), [a]) => Some(Step::Unary(op, *a)),
            (Step::Binary(op, _, _), [x, y]) => Some(Step::Binary(op, *x, *y)),
            (Step::Select(..), [c, x, y]) => Some(Step::Select(*c, *x, *y)),
            (Step::Cast(_), [a]) => Some(Step::Cast(*a)),
            (Step::Reduce(op, _), [a]) => Some(Step::Reduce(op, *a)),
            (
                Step::Input(_)
                | Step::Const(_)
                | Step::Unary(..)
                | Step::Binary(..)
                | Step::Select(..)
                | Step::Cast(_)
                | Step::Reduce(..),
                _,
            ) => None,
        }
    }

    /// The step a primitive is in a region, with its operands' value indices; `None` for
    /// primitives that never join a region. `Full` becomes a constant and takes no
    /// operands; a `Reduce` becomes [`Step::Reduce`] (the planner checks that its axes are
    /// the region's).
    pub(crate) fn of(op: &Primitive, args: &[usize]) -> Option<Step> {
        match (op, args) {
            (Primitive::Full(f), []) => Some(Step::Const(f.value)),
            (Primitive::Unary(u), [a]) => Some(Step::Unary(u.op, *a)),
            (Primitive::Binary(b), [x, y]) => Some(Step::Binary(b.op, *x, *y)),
            (Primitive::Select(_), [c, x, y]) => Some(Step::Select(*c, *x, *y)),
            (Primitive::AsType(_), [a]) => Some(Step::Cast(*a)),
            (Primitive::Reduce(r), [a]) => Some(Step::Reduce(r.op, *a)),
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
                | Primitive::Marker(_)
                | Primitive::Fused(_),
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
                Step::Reduce(op, a) => write!(f, "{}(v{a}, axes {:?})", op.name(), self.reduce_axes)?,
            }
        }
        if let Some(op) = self.reduction {
            write!(f, "\n  out = {}(v{}, axes {:?})", op.name(), self.result, self.reduce_axes)?;
        } else {
            write!(f, "\n  out = v{}", self.result)?;
        }
        for (k, v) in self.extra_outputs.iter().enumerate() {
            write!(f, "\n  out{} = v{v}", k + 1)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::Step;
    use crate::primitive::UnaryOp;

    #[test]
    fn steps_compare_constants_by_bits() {
        assert_eq!(Step::Const(0.5), Step::Const(0.5));
        assert_ne!(Step::Const(0.0), Step::Const(-0.0));
        assert_eq!(Step::Const(f64::NAN), Step::Const(f64::NAN));
        assert_ne!(Step::Input(0), Step::Cast(0));
        assert_eq!(Step::Unary(UnaryOp::Exp, 1), Step::Unary(UnaryOp::Exp, 1));
        assert_ne!(Step::Unary(UnaryOp::Exp, 1), Step::Unary(UnaryOp::Log, 1));
        let set: HashSet<Step> =
            [Step::Const(f64::NAN), Step::Const(f64::NAN), Step::Const(0.0), Step::Const(-0.0)].into();
        assert_eq!(set.len(), 3);
    }
}
