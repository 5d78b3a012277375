//! Elementwise ops of one input, and dtype conversion.

use crate::array::Array;
use crate::dtype::DType;
use crate::error::Result;
use crate::primitive::Primitive;

impl Array {
    /// Converts to `dtype` (`as` semantics: floats truncate toward zero into integers,
    /// saturating; any non-zero value is `true`).
    pub fn astype(&self, dtype: DType) -> Result<Array> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        Array::from_op(Primitive::AsType, vec![self.clone()], self.shape().to_vec(), dtype)
    }
}
