//! `AsType`: dtype conversion.

use super::{FusionClass, Meta, Rules, arity, derivatives_not_yet};
use crate::array::Array;
use crate::dtype::DType;
use crate::error::Result;

/// One input, converted to `dtype` (`as` semantics: floats truncate toward zero into
/// integers, saturating; any non-zero value is `true`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AsType {
    /// The target dtype.
    pub dtype: DType,
}

impl Rules for AsType {
    fn name(&self) -> &'static str {
        "astype"
    }
    fn infer(&self, inputs: &[&Meta]) -> Result<Vec<Meta>> {
        arity("astype", inputs, 1)?;
        Ok(vec![Meta::new(inputs[0].shape.clone(), self.dtype)])
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::Elementwise
    }
    derivatives_not_yet!();
}
