//! `AsType`: dtype conversion.

use super::{FusionClass, Meta, Rules, arity};
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
    fn infer(&self, inputs: &[&Meta]) -> Result<Meta> {
        arity("astype", inputs, 1)?;
        Ok(Meta::new(inputs[0].shape.clone(), self.dtype))
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::Elementwise
    }
    /// Between floats the derivative is 1 (the cotangent converts back); to or from
    /// integers and bool there is none.
    fn vjp(&self, primals: &[Array], output: &Array, cotangent: &Array) -> Result<Vec<Option<Array>>> {
        let from = primals[0].dtype();
        if !from.is_float() || !output.dtype().is_float() {
            return Ok(vec![None]);
        }
        Ok(vec![Some(cotangent.astype(from)?)])
    }
    fn jvp(&self, primals: &[Array], output: &Array, tangents: &[Option<Array>]) -> Result<Option<Array>> {
        if !primals[0].dtype().is_float() || !output.dtype().is_float() {
            return Ok(None);
        }
        tangents[0].as_ref().map(|t| t.astype(self.dtype)).transpose()
    }
}
