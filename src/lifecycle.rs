//! Shutdown and process exit.

use crate::error::Result;

/// Closes every stream taken so far: each `Stream` value handed out before this call
/// becomes stale, and work on it returns [`crate::Error::StreamClosed`] without
/// touching a device. Waits (bounded) for in-flight async evaluations. New streams
/// work afterwards.
pub fn shutdown() -> Result<()> {
    crate::stream::invalidate_all();
    crate::stream::registry().wait_idle(None, std::time::Duration::from_secs(10));
    Ok(())
}
