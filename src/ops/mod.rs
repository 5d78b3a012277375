//! User-facing ops, one file per family. They validate arguments, infer the output
//! shape and dtype and build graph nodes; they compute nothing.

pub mod binary;
pub mod creation;
pub mod device;
pub mod index;
pub mod linalg;
pub mod nn;
pub mod operators;
pub mod random;
pub mod reduce;
pub mod shape;
pub mod slice_arg;
pub mod unary;
pub mod update;

// Free functions re-exported at the crate root (methods live on `Array`).
pub use binary::{Operand, ScalarKind, where_};
pub use creation::{arange, eye, full, linspace, ones, zeros};
pub use index::IndexMode;
pub use linalg::outer;
pub use nn::{Reduction, cross_entropy, dropout, logaddexp, mse, one_hot};
pub use shape::{concatenate, split, split_at, stack};
pub use slice_arg::{NewAxis, RangeArg, SliceArg, SliceInt};
pub use update::{At, AtIndex};
