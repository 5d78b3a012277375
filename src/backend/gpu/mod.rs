//! The wgpu GPU backend.

use std::sync::Arc;

use crate::backend::Backend;
use crate::error::{Error, Result};

/// The GPU backend for adapter `index`.
pub fn backend(index: u32) -> Result<Arc<dyn Backend>> {
    Err(Error::Device(format!("gpu({index}): the GPU backend is not available in this build")))
}
