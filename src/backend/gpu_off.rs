//! Stand-in for the wgpu backend in a build without the `gpu` feature: the same public
//! entry points, each saying the backend is not compiled in, so code written for GPU
//! builds compiles unchanged and finds out at run time (an `Err`, never a panic).

use std::sync::Arc;

use crate::backend::Backend;
use crate::error::{Error, Result};

/// Why there is no GPU: the one message every entry point below returns.
fn not_built(index: u32) -> Error {
    Error::Device(format!(
        "gpu({index}): lazuli was built without the `gpu` feature; enable it (it is on by \
         default) to use the wgpu backend, or run on Device::cpu()"
    ))
}

/// Always `Err(Error::Device)`: this build has no GPU backend.
pub fn backend(index: u32) -> Result<Arc<dyn Backend>> {
    Err(not_built(index))
}

/// Always `Err(Error::Device)`: this build has no GPU backend.
pub fn adapter_summary() -> Result<String> {
    Err(not_built(0))
}

/// Always 0: this build has no GPU backend, so nothing is uploaded.
pub fn uploads() -> u64 {
    0
}

/// Always 0: this build has no GPU backend, so nothing is uploaded.
pub fn uploads_here() -> u64 {
    0
}

/// Always 0: this build has no GPU backend, so nothing is recorded.
pub fn unsubmitted(_stream: &crate::stream::Stream) -> usize {
    0
}

/// Always false: this build has no GPU backend.
pub fn is_software_adapter() -> bool {
    false
}

/// Always `Err(Error::Device)`: this build has no GPU backend.
pub fn destroy_device_for_testing() -> Result<()> {
    Err(not_built(0))
}

/// Never started: nothing to drain at shutdown or exit.
pub(crate) fn started() -> Option<Arc<dyn Backend>> {
    None
}

/// Always 0: this build keeps no GPU buffers (for `lazuli::memory::cache`).
pub(crate) fn cached_bytes() -> u64 {
    0
}

/// Always `Err(Error::Device)`: this build has no GPU backend.
pub(crate) fn set_cache_limit(_bytes: u64) -> Result<u64> {
    Err(Error::device("lazuli was built without the `gpu` feature"))
}

/// Always `Err(Error::Device)`: this build has no GPU backend.
pub(crate) fn clear_cache() -> Result<()> {
    Err(Error::device("lazuli was built without the `gpu` feature"))
}

/// Always `Err(Error::Device)`: this build has no GPU backend.
pub fn kernel_times() -> Result<Option<crate::backend::KernelTimes>> {
    Err(not_built(0))
}

/// Does nothing: this build has no GPU backend, so nothing is timed.
pub fn reset_kernel_times() {}
