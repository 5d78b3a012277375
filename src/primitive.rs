//! The primitive op set that backends implement. Everything in [`crate::ops`] lowers
//! to these (tinygrad/luminal style): a backend that runs these runs every op.
//!
//! Conventions every backend can rely on (checked when the graph is built):
//! - Every input buffer is contiguous, row-major, in the input's own dtype.
//! - `Binary` and `Select` inputs have shapes that broadcast (NumPy rules) to the output
//!   shape; the kernel reads them with broadcast strides (see [`crate::shape::broadcast_strides`]).
//! - `Reduce`, `ArgReduce` keep reduced axes as size 1 (keepdims); the op layer reshapes.
//! - Integer division and remainder by zero give 0 (no trap on any device).
//! - `Gather` clamps indices into range; `Scatter` drops out-of-range updates (as JAX
//!   does), so no data-dependent error can arise on any device. Negative indices count
//!   from the end.

use crate::dtype::DType;

/// Elementwise ops of one input. Unless noted, the output dtype is the input's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[allow(missing_docs)]
pub enum UnaryOp {
    Neg,
    Abs,
    Sign,
    Square,
    Floor,
    Ceil,
    /// Round half to even, as NumPy.
    Round,
    // Float-only (the op layer casts integers to float first).
    Exp,
    Expm1,
    Log,
    Log1p,
    Log2,
    Sqrt,
    Rsqrt,
    Reciprocal,
    Sin,
    Cos,
    Tan,
    Tanh,
    Sigmoid,
    Erf,
    /// Output bool.
    IsNan,
    /// Output bool.
    IsInf,
    /// Input and output bool.
    LogicalNot,
}

impl UnaryOp {
    /// True for ops defined on floats only.
    pub fn float_only(self) -> bool {
        use UnaryOp::*;
        matches!(
            self,
            Exp | Expm1 | Log | Log1p | Log2 | Sqrt | Rsqrt | Reciprocal | Sin | Cos | Tan | Tanh | Sigmoid | Erf
        )
    }
}

/// Elementwise ops of two inputs of the same dtype (the op layer promotes first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[allow(missing_docs)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    /// Sign follows the divisor, as NumPy's `remainder`.
    Remainder,
    FloorDivide,
    Maximum,
    Minimum,
    /// Comparisons output bool.
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// Logical ops take and give bool.
    LogicalAnd,
    LogicalOr,
    LogicalXor,
}

impl BinaryOp {
    /// True for ops whose output is bool.
    pub fn is_comparison(self) -> bool {
        use BinaryOp::*;
        matches!(self, Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor)
    }
}

/// Reductions over a set of axes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[allow(missing_docs)]
pub enum ReduceOp {
    Sum,
    Prod,
    Max,
    Min,
}

/// Index-of-extremum reductions along one axis. Output dtype `U32`; ties give the
/// first index; NaN counts as the extremum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[allow(missing_docs)]
pub enum ArgReduceOp {
    ArgMax,
    ArgMin,
}

/// Inclusive scans along one axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[allow(missing_docs)]
pub enum ScanOp {
    Sum,
    Prod,
    Max,
    Min,
}

/// How `Scatter` combines updates with the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScatterMode {
    /// Overwrite; where indices repeat, which update wins is unspecified.
    Assign,
    /// Accumulate; repeated indices add up.
    Add,
}

/// A primitive: what a backend kernel computes, given contiguous inputs, into a new
/// contiguous output of the node's shape and dtype.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Primitive {
    /// No inputs; every element is `value` cast to the output dtype.
    Full {
        /// The fill value.
        value: f64,
    },
    /// No inputs; `out[i] = start + i * step` computed in f64, cast to the dtype.
    Arange {
        /// First value.
        start: f64,
        /// Increment.
        step: f64,
    },
    /// Input: a `U32` key `[k0, k1]`. Output `U32` of any shape:
    /// `out[i] = threefry2x32_20((k0, k1), (i as u32, (i >> 32) as u32)).0` for the flat
    /// index `i`, so every element is independent of device, thread and chunking.
    /// `backend::cpu::random` holds the reference definition.
    RandomBits,
    /// One input, same shape.
    Unary(UnaryOp),
    /// Two inputs of one dtype, broadcast to the output.
    Binary(BinaryOp),
    /// `where(cond, a, b)`: inputs bool, T, T, broadcast to the output.
    Select,
    /// One input, converted to the output dtype (`as` semantics; float to bool is `!= 0`).
    AsType,
    /// One input; the output shares its data with a new shape of the same size.
    Reshape,
    /// One input; reads it as a strided view: `out[idx] = in[offset + sum(idx * strides)]`.
    /// Strides may be zero (broadcast) or negative (flip).
    AsStrided {
        /// Strides in elements, one per output axis.
        strides: Vec<isize>,
        /// Offset in elements.
        offset: usize,
    },
    /// One input; the same data, made available on this node's device.
    Copy,
    /// Reduction over `axes` (sorted, distinct); output keeps them with size 1.
    Reduce {
        /// The reduction.
        op: ReduceOp,
        /// Axes to reduce.
        axes: Vec<usize>,
    },
    /// Index of the extremum along `axis`; output keeps it with size 1, dtype `U32`.
    ArgReduce {
        /// Which extremum.
        op: ArgReduceOp,
        /// The axis.
        axis: usize,
    },
    /// Inclusive scan along `axis`.
    Scan {
        /// The scan.
        op: ScanOp,
        /// The axis.
        axis: usize,
        /// Scan from the end.
        reverse: bool,
    },
    /// Inputs of one dtype and rank, equal except along `axis`; joined along it.
    Concatenate {
        /// The axis.
        axis: usize,
    },
    /// Inputs `(src, indices)`, same rank, `indices` (`I32` or `U32`) equal to `src`'s
    /// shape except along `axis`: `out[i] = src[i with i[axis] = indices[i]]`.
    /// Output shape = indices' shape.
    Gather {
        /// The axis.
        axis: usize,
    },
    /// Inputs `(dst, indices, updates)`; `indices` and `updates` have one shape, equal to
    /// `dst`'s except along `axis`: `out = dst; out[i with i[axis] = indices[i]] (op)= updates[i]`.
    Scatter {
        /// The axis.
        axis: usize,
        /// Assign or add.
        mode: ScatterMode,
    },
    /// Inputs `a: [..., M, K]`, `b: [..., K, N]` of one float dtype, batch dims
    /// broadcastable; output `[broadcast(batch), M, N]`. With `trans_a`, input 0 holds A
    /// with its last two axes swapped (`[..., K, M]`) and is read transposed in place;
    /// likewise `trans_b` (`[..., N, K]`). `ops` sets them for transposed views, so a
    /// transpose feeding a matmul is never copied.
    Matmul {
        /// Input 0 is stored `[..., K, M]`.
        trans_a: bool,
        /// Input 1 is stored `[..., N, K]`.
        trans_b: bool,
    },
}

impl Primitive {
    /// A short name for errors and logs.
    pub fn name(&self) -> &'static str {
        match self {
            Primitive::Full { .. } => "full",
            Primitive::Arange { .. } => "arange",
            Primitive::RandomBits => "random_bits",
            Primitive::Unary(_) => "unary",
            Primitive::Binary(_) => "binary",
            Primitive::Select => "where",
            Primitive::AsType => "astype",
            Primitive::Reshape => "reshape",
            Primitive::AsStrided { .. } => "as_strided",
            Primitive::Copy => "copy",
            Primitive::Reduce { .. } => "reduce",
            Primitive::ArgReduce { .. } => "arg_reduce",
            Primitive::Scan { .. } => "scan",
            Primitive::Concatenate { .. } => "concatenate",
            Primitive::Gather { .. } => "gather",
            Primitive::Scatter { .. } => "scatter",
            Primitive::Matmul { .. } => "matmul",
        }
    }
}

/// Shape and dtype of a node, as a backend sees them.
#[derive(Debug, Clone, PartialEq)]
pub struct Meta {
    /// The shape.
    pub shape: Vec<usize>,
    /// The dtype.
    pub dtype: DType,
}
