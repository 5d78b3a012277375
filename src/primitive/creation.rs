//! Sources without array inputs: `Full` and `Arange`.

use super::{FusionClass, Meta, Rules, arity};
use crate::array::Array;
use crate::dtype::DType;
use crate::error::Result;

/// Every element is `value` cast to `dtype` (`as` semantics).
#[derive(Debug, Clone, PartialEq)]
pub struct Full {
    /// The fill value.
    pub value: f64,
    /// Output shape.
    pub shape: Vec<usize>,
    /// Output dtype.
    pub dtype: DType,
}

impl Rules for Full {
    fn name(&self) -> &'static str {
        "full"
    }
    fn infer(&self, inputs: &[&Meta]) -> Result<Meta> {
        arity("full", inputs, 0)?;
        Ok(Meta::new(self.shape.clone(), self.dtype))
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::Source
    }
    fn vjp(&self, _: &[Array], _: &Array, _: &Array) -> Result<Vec<Option<Array>>> {
        Ok(Vec::new())
    }
    fn jvp(&self, _: &[Array], _: &Array, _: &[Option<Array>]) -> Result<Option<Array>> {
        Ok(None)
    }
}

/// `out[i] = start + i * step` for the flat index `i`, computed in f64 and cast to
/// `dtype`.
#[derive(Debug, Clone, PartialEq)]
pub struct Arange {
    /// First value.
    pub start: f64,
    /// Increment.
    pub step: f64,
    /// Output shape (values run along the flat index).
    pub shape: Vec<usize>,
    /// Output dtype.
    pub dtype: DType,
}

impl Rules for Arange {
    fn name(&self) -> &'static str {
        "arange"
    }
    fn infer(&self, inputs: &[&Meta]) -> Result<Meta> {
        arity("arange", inputs, 0)?;
        Ok(Meta::new(self.shape.clone(), self.dtype))
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::Source
    }
    fn vjp(&self, _: &[Array], _: &Array, _: &Array) -> Result<Vec<Option<Array>>> {
        Ok(Vec::new())
    }
    fn jvp(&self, _: &[Array], _: &Array, _: &[Option<Array>]) -> Result<Option<Array>> {
        Ok(None)
    }
}
