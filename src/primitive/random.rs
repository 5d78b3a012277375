//! `RandomBits`: counter-based random bits (reference: `backend/cpu/random.rs`).

use super::{FusionClass, Meta, Rules, arity};
use crate::array::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// Input: a `U32` key of two elements `[k0, k1]`. Output `U32` of `shape`:
/// `out[i] = threefry2x32_20((k0, k1), (i as u32, (i >> 32) as u32)).0` for the flat
/// index `i`, so every element is independent of device, thread and chunking.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RandomBits {
    /// Output shape.
    pub shape: Vec<usize>,
}

impl Rules for RandomBits {
    fn name(&self) -> &'static str {
        "random_bits"
    }
    fn infer(&self, inputs: &[&Meta]) -> Result<Meta> {
        arity("random_bits", inputs, 1)?;
        let key = inputs[0];
        if key.dtype != DType::U32 {
            return Err(Error::dtype("random_bits", key.dtype, "the key must be uint32"));
        }
        if key.numel() != 2 {
            return Err(Error::shape(
                "random_bits",
                format!("the key must have 2 elements, got shape {:?}", key.shape),
            ));
        }
        Ok(Meta::new(self.shape.clone(), DType::U32))
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::Source
    }
    fn vjp(&self, _: &[Array], _: &Array, _: &Array) -> Result<Vec<Option<Array>>> {
        Ok(vec![None])
    }
    fn jvp(&self, _: &[Array], _: &Array, _: &[Option<Array>]) -> Result<Option<Array>> {
        Ok(None)
    }
}
