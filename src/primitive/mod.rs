//! The primitive op set that backends implement, and the rules each primitive carries.
//! Array users need none of it; backend authors match on [`Primitive`].
//!
//! Everything in [`crate::ops`] lowers to these (tinygrad style): a backend that runs
//! these runs every op. Each primitive is a type in this folder, one file per family,
//! implementing [`Rules`]: its name, its output inference (the one home of shape and
//! dtype rules: [`Array::from_op`](crate::Array) calls it), its derivative rules, its
//! [`FusionClass`] and an optional decomposition into other primitives.
//!
//! One list, [`for_each_primitive!`], generates the [`Primitive`] enum and every in-tree
//! dispatch (the CPU and GPU kernel tables): a primitive without a kernel on either
//! backend fails to compile.
//!
//! Conventions every backend can rely on (checked by [`Rules::infer`] when the graph is
//! built):
//! - Every input buffer is contiguous, row-major, in the input's own dtype.
//! - `Binary` and `Select` inputs have shapes that broadcast (NumPy rules) to the output
//!   shape; the kernel reads them with broadcast strides (see [`crate::shape::broadcast_strides`]).
//! - `Reduce`, `ArgReduce` keep reduced axes as size 1 (keepdims); the op layer reshapes.
//! - Integer division and remainder by zero give 0 (no trap on any device).
//! - `Gather` clamps indices into range; `Scatter` drops out-of-range updates (as JAX
//!   does), so no data-dependent error can arise on any device. Negative indices count
//!   from the end. Gathering from an empty axis is refused by `infer`.

mod binary;
mod calculus;
mod cast;
mod creation;
mod fused;
mod index;
mod marker;
mod matmul;
mod random;
mod reduce;
mod table;
mod unary;
mod view;

use std::fmt::Debug;

pub use binary::{Binary, BinaryOp, Select};
pub use cast::AsType;
pub use creation::{Arange, Full};
pub use fused::Fused;
pub use index::{Concatenate, Gather, Scatter, ScatterMode};
pub use marker::{ArrayFn, CustomRule, Marker, MarkerKind, VjpFn};
pub use matmul::{Matmul, MatmulPlan};
pub use random::RandomBits;
pub use reduce::{ArgReduce, ArgReduceOp, Reduce, ReduceOp, Scan, ScanOp};
#[cfg(feature = "gpu")]
pub(crate) use table::wgsl_constants;
pub use table::{DTypeClass, Domain};
pub use unary::{Unary, UnaryOp};
pub use view::{AsStrided, DeviceCopy, Reshape};

use crate::array::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};

pub(crate) use calculus::{Partial, or_zeros, unbroadcast};

/// Shape and dtype of a node, as a backend sees them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Meta {
    /// The shape.
    pub shape: crate::shape::Shape,
    /// The dtype.
    pub dtype: DType,
}

impl Meta {
    /// A meta from a shape and a dtype.
    pub fn new(shape: impl AsRef<[usize]>, dtype: DType) -> Meta {
        Meta { shape: crate::shape::Shape::from_slice(shape.as_ref()), dtype }
    }
    /// Number of elements.
    pub fn numel(&self) -> usize {
        crate::shape::numel(&self.shape)
    }
    /// Bytes of the elements in the host layout (saturating: sizes are checked elsewhere).
    pub fn nbytes(&self) -> u64 {
        (self.numel() as u64).saturating_mul(self.dtype.size() as u64)
    }
}

/// How a primitive may take part in kernel fusion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FusionClass {
    /// One output element from the same-index (broadcast) elements of the inputs.
    Elementwise,
    /// Combines elements along axes (reductions, scans, arg-reductions).
    Reduction,
    /// Reads its input at other positions without computing (reshape, strided views).
    View,
    /// Makes data from parameters alone (fill, arange, random bits).
    Source,
    /// Anything else (matmul, gather, scatter, concatenation): never fused.
    Opaque,
}

/// What every primitive knows about itself. Implemented once per primitive type, in the
/// primitive's own file; nothing else in the crate restates these rules.
pub trait Rules: Debug + Send + Sync + 'static {
    /// A short name for errors and logs ("exp", not "unary").
    fn name(&self) -> &'static str;

    /// The output's shape and dtype for inputs of these shapes and dtypes, or the `Err`
    /// that building the node reports. The single home of the primitive's shape/dtype
    /// rules. (A graph node holds one output.)
    fn infer(&self, inputs: &[&Meta]) -> Result<Meta>;

    /// How the primitive may be fused.
    fn fusion_class(&self) -> FusionClass;

    /// Vector-Jacobian product: given the primal inputs, this node's output and the
    /// cotangent of that output (same shape and dtype), one cotangent per input, in the
    /// input's shape and dtype; `None` where the input gets none (integer inputs, indices,
    /// keys, or a zero derivative). Built from ops, so rules run on any device and can be
    /// differentiated again.
    fn vjp(&self, primals: &[Array], output: &Array, cotangent: &Array) -> Result<Vec<Option<Array>>>;

    /// Jacobian-vector product: given the primal inputs, this node's output and one
    /// tangent per input (`None` for a zero tangent), the output's tangent (`None` when
    /// it is zero).
    fn jvp(&self, primals: &[Array], output: &Array, tangents: &[Option<Array>]) -> Result<Option<Array>>;

    /// The same computation built from other primitives, for backends that lack a kernel
    /// for this one (see [`crate::backend::Backend::supports`]). `None` when there is no
    /// decomposition. Decompositions only use primitives below this one in the list
    /// `ARCHITECTURE.md` gives, so they always terminate.
    fn decompose(&self, _inputs: &[Array]) -> Option<Result<Vec<Array>>> {
        None
    }
}

/// Checks the number of inputs a primitive got.
pub(crate) fn arity(op: &'static str, inputs: &[&Meta], n: usize) -> Result<()> {
    if inputs.len() != n {
        return Err(Error::invalid(op, format!("takes {n} inputs, got {}", inputs.len())));
    }
    Ok(())
}

/// Calls `$m! { Variant(Type), ... }` with the list of every primitive: the one list
/// that the [`Primitive`] enum and each backend's kernel dispatch are generated from.
/// Adding a primitive here makes every dispatch that lacks its kernel fail to compile.
#[macro_export]
#[doc(hidden)]
macro_rules! for_each_primitive {
    ($m:ident) => {
        $m! {
            /// Every element is a constant.
            Full($crate::primitive::Full),
            /// `start + i * step` for the flat index `i`.
            Arange($crate::primitive::Arange),
            /// Threefry-2x32 random bits from a key.
            RandomBits($crate::primitive::RandomBits),
            /// One input, elementwise.
            Unary($crate::primitive::Unary),
            /// Two inputs of one dtype, broadcast to the output.
            Binary($crate::primitive::Binary),
            /// `where(cond, a, b)`.
            Select($crate::primitive::Select),
            /// Conversion to another dtype.
            AsType($crate::primitive::AsType),
            /// The same data in a new shape.
            Reshape($crate::primitive::Reshape),
            /// A strided view, materialised.
            AsStrided($crate::primitive::AsStrided),
            /// The same data on this node's device.
            Copy($crate::primitive::DeviceCopy),
            /// Reduction over axes (kept as size 1).
            Reduce($crate::primitive::Reduce),
            /// Index of the extremum along an axis.
            ArgReduce($crate::primitive::ArgReduce),
            /// Inclusive scan along an axis.
            Scan($crate::primitive::Scan),
            /// Join along an axis.
            Concatenate($crate::primitive::Concatenate),
            /// Read at indices along an axis.
            Gather($crate::primitive::Gather),
            /// Write or add at indices along an axis.
            Scatter($crate::primitive::Scatter),
            /// Batched matrix product.
            Matmul($crate::primitive::Matmul),
            /// One of its inputs, unchanged, with a transform rule of its own
            /// (`stop_gradient`, `custom_vjp`, `checkpoint`).
            Marker($crate::primitive::Marker),
            /// A fused region that `compile` kept: one node for its primitives.
            Fused($crate::primitive::Fused),
        }
    };
}
pub use for_each_primitive;

macro_rules! define_primitive {
    ($($(#[$doc:meta])* $v:ident($t:ty),)*) => {
        /// A primitive: what a backend kernel computes, given contiguous inputs, into new
        /// contiguous outputs of the shapes and dtypes [`Rules::infer`] gives. Generated
        /// from [`for_each_primitive!`].
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub enum Primitive {
            $($(#[$doc])* $v($t),)*
        }

        impl Primitive {
            /// The primitive's rules.
            pub fn rules(&self) -> &dyn Rules {
                match self {
                    $(Primitive::$v(p) => p,)*
                }
            }
        }

        $(
            impl From<$t> for Primitive {
                fn from(p: $t) -> Primitive {
                    Primitive::$v(p)
                }
            }
        )*
    };
}
for_each_primitive!(define_primitive);

impl Primitive {
    /// A short name for errors and logs ("exp", "matmul").
    pub fn name(&self) -> &'static str {
        self.rules().name()
    }
    /// The output's meta for these inputs (see [`Rules::infer`]).
    pub fn infer(&self, inputs: &[&Meta]) -> Result<Meta> {
        self.rules().infer(inputs)
    }
    /// How this primitive may be fused.
    pub fn fusion_class(&self) -> FusionClass {
        self.rules().fusion_class()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType::*;

    fn m(shape: &[usize], dtype: DType) -> Meta {
        Meta::new(shape, dtype)
    }

    fn infer(p: impl Into<Primitive>, ins: &[Meta]) -> Result<Meta> {
        p.into().infer(&ins.iter().collect::<Vec<_>>())
    }

    #[test]
    fn names_are_the_ops() {
        assert_eq!(Primitive::from(Unary { op: UnaryOp::Exp }).name(), "exp");
        assert_eq!(Primitive::from(Binary { op: BinaryOp::FloorDivide }).name(), "floor_divide");
        assert_eq!(Primitive::from(Reduce { op: ReduceOp::Sum, axes: vec![0] }).name(), "sum");
        assert_eq!(Primitive::from(Scatter { axis: 0, mode: ScatterMode::Add }).name(), "scatter_add");
        assert_eq!(UnaryOp::Exp.wgsl_name(), "UNARY_EXP");
        assert_eq!(BinaryOp::FloorDivide.wgsl_name(), "BINARY_FLOOR_DIVIDE");
    }

    #[test]
    fn infer_gives_shapes_and_dtypes() {
        let exp = Unary { op: UnaryOp::Exp };
        assert_eq!(infer(exp, &[m(&[2, 3], F32)]).unwrap(), m(&[2, 3], F32));
        assert_eq!(infer(Unary { op: UnaryOp::IsNan }, &[m(&[4], F16)]).unwrap(), m(&[4], Bool));
        let lt = Binary { op: BinaryOp::Lt };
        assert_eq!(infer(lt, &[m(&[3, 1], I32), m(&[4], I32)]).unwrap(), m(&[3, 4], Bool));
        let sum = Reduce { op: ReduceOp::Sum, axes: vec![0, 2] };
        assert_eq!(infer(sum, &[m(&[2, 3, 4], F32)]).unwrap(), m(&[1, 3, 1], F32));
        let argmax = ArgReduce { op: ArgReduceOp::ArgMax, axis: 1 };
        assert_eq!(infer(argmax, &[m(&[2, 3], F32)]).unwrap(), m(&[2, 1], U32));
        let mm = Matmul { trans_a: true, trans_b: false };
        assert_eq!(infer(mm, &[m(&[2, 5, 4], F32), m(&[1, 5, 6], F32)]).unwrap(), m(&[2, 4, 6], F32));
        let cat = Concatenate { axis: 1 };
        assert_eq!(infer(cat, &[m(&[2, 3], F32), m(&[2, 0], F32), m(&[2, 1], F32)]).unwrap(), m(&[2, 4], F32));
        let full = Full { value: 1.0, shape: vec![3], dtype: I64 };
        assert_eq!(infer(full, &[]).unwrap(), m(&[3], I64));
    }

    #[test]
    fn infer_refuses_what_the_kernels_do_not_take() {
        use crate::error::Error;
        let dtype_err = |r: Result<Meta>| assert!(matches!(r, Err(Error::DType { .. })), "{r:?}");
        let shape_err = |r: Result<Meta>| assert!(matches!(r, Err(Error::Shape { .. })), "{r:?}");
        dtype_err(infer(Unary { op: UnaryOp::Exp }, &[m(&[2], I32)]));
        dtype_err(infer(Unary { op: UnaryOp::Neg }, &[m(&[2], Bool)]));
        dtype_err(infer(Binary { op: BinaryOp::Add }, &[m(&[2], F32), m(&[2], F16)]));
        dtype_err(infer(Binary { op: BinaryOp::Div }, &[m(&[2], I32), m(&[2], I32)]));
        dtype_err(infer(Select, &[m(&[2], I32), m(&[2], F32), m(&[2], F32)]));
        dtype_err(infer(Matmul::default(), &[m(&[2, 2], I32), m(&[2, 2], I32)]));
        dtype_err(infer(Gather { axis: 0 }, &[m(&[3], F32), m(&[2], F32)]));
        shape_err(infer(Binary { op: BinaryOp::Add }, &[m(&[3], F32), m(&[4], F32)]));
        shape_err(infer(Reshape { shape: vec![5] }, &[m(&[2, 3], F32)]));
        shape_err(infer(AsStrided { shape: vec![3], strides: vec![2], offset: 2 }, &[m(&[6], F32)]));
        assert!(infer(AsStrided { shape: vec![3], strides: vec![-2], offset: 5 }, &[m(&[6], F32)]).is_ok());
        shape_err(infer(Matmul::default(), &[m(&[2, 3], F32), m(&[2, 3], F32)]));
        shape_err(infer(RandomBits { shape: vec![4] }, &[m(&[3], U32)]));
        // One answer on every device: a non-empty gather from an empty axis is refused.
        shape_err(infer(Gather { axis: 0 }, &[m(&[0, 2], F32), m(&[1, 2], I32)]));
        assert!(infer(Gather { axis: 0 }, &[m(&[0, 2], F32), m(&[0, 2], I32)]).is_ok());
        assert!(matches!(infer(Reduce { op: ReduceOp::Max, axes: vec![2] }, &[m(&[2], F32)]), Err(Error::Axis { .. })));
        assert!(matches!(infer(Unary { op: UnaryOp::Exp }, &[]), Err(Error::Invalid { .. })));
    }

    #[test]
    fn fusion_classes() {
        assert_eq!(Primitive::from(Unary { op: UnaryOp::Exp }).fusion_class(), FusionClass::Elementwise);
        assert_eq!(Primitive::from(Matmul::default()).fusion_class(), FusionClass::Opaque);
    }
}
