//! The primitive op set that backends implement, and the rules each primitive carries.
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
mod cast;
mod creation;
mod index;
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
pub use index::{Concatenate, Gather, Scatter, ScatterMode};
pub use matmul::{Matmul, MatmulPlan};
pub use random::RandomBits;
pub use reduce::{ArgReduce, ArgReduceOp, Reduce, ReduceOp, Scan, ScanOp};
pub use table::{DTypeClass, Domain, wgsl_constants};
pub use unary::{Unary, UnaryOp};
pub use view::{AsStrided, DeviceCopy, Reshape};

use crate::array::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// Shape and dtype of a node, as a backend sees them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Meta {
    /// The shape.
    pub shape: Vec<usize>,
    /// The dtype.
    pub dtype: DType,
}

impl Meta {
    /// A meta from a shape and a dtype.
    pub fn new(shape: impl Into<Vec<usize>>, dtype: DType) -> Meta {
        Meta { shape: shape.into(), dtype }
    }
    /// Number of elements.
    pub fn numel(&self) -> usize {
        crate::shape::numel(&self.shape)
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

    /// Output shapes and dtypes for inputs of these shapes and dtypes, or the `Err` that
    /// building the node reports. The single home of the primitive's shape/dtype rules.
    fn infer(&self, inputs: &[&Meta]) -> Result<Vec<Meta>>;

    /// How the primitive may be fused.
    fn fusion_class(&self) -> FusionClass;

    /// Vector-Jacobian product: given the primal inputs, the outputs and one cotangent
    /// per output, one cotangent per input (`None` where the input gets no gradient).
    fn vjp(&self, primals: &[Array], outputs: &[Array], cotangents: &[Array]) -> Result<Vec<Option<Array>>>;

    /// Jacobian-vector product: given the primal inputs and one tangent per input (`None`
    /// for a zero tangent), one tangent per output.
    fn jvp(&self, primals: &[Array], tangents: &[Option<Array>]) -> Result<Vec<Array>>;

    /// The same computation built from other primitives, for backends that lack a kernel
    /// for this one (see [`crate::backend::Backend::supports`]). `None` when there is no
    /// decomposition. Decompositions only use primitives below this one in the list
    /// `ARCHITECTURE.md` gives, so they always terminate.
    fn decompose(&self, _inputs: &[Array]) -> Option<Result<Vec<Array>>> {
        None
    }
}

/// The `Err` a derivative slot returns until the transforms issue fills it.
pub(crate) fn no_rule(op: &'static str, rule: &'static str) -> Error {
    Error::Unsupported { backend: "transforms".into(), msg: format!("{op} has no {rule} rule yet") }
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
    /// Output metas for these inputs (see [`Rules::infer`]).
    pub fn infer(&self, inputs: &[&Meta]) -> Result<Vec<Meta>> {
        self.rules().infer(inputs)
    }
    /// How this primitive may be fused.
    pub fn fusion_class(&self) -> FusionClass {
        self.rules().fusion_class()
    }
}
