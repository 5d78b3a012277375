//! The crate's error type. Every fallible public call returns [`Result`].

use crate::dtype::DType;

/// Result alias used by every fallible public call.
pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong, with the op and the shapes, dtypes or axes involved.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// Shapes that do not fit the op (broadcasting, matmul, reshape, concatenate...).
    #[error("{op}: {msg}")]
    Shape {
        /// The op that rejected its input.
        op: &'static str,
        /// What was wrong, with the shapes involved.
        msg: String,
    },
    /// A dtype the op does not accept.
    #[error("{op}: unsupported dtype {dtype}: {msg}")]
    DType {
        /// The op that rejected its input.
        op: &'static str,
        /// The offending dtype.
        dtype: DType,
        /// Why, and what would be accepted.
        msg: String,
    },
    /// An axis outside `-ndim..ndim`, or repeated.
    #[error("{op}: axis {axis} is out of range for an array of {ndim} dimensions")]
    Axis {
        /// The op that rejected the axis.
        op: &'static str,
        /// The axis as the caller gave it.
        axis: isize,
        /// Rank of the array.
        ndim: usize,
    },
    /// Any other invalid argument (a zero step, a bad size, mismatched data length...).
    #[error("{op}: {msg}")]
    Invalid {
        /// The op that rejected its argument.
        op: &'static str,
        /// What was wrong.
        msg: String,
    },
    /// A device that does not exist or cannot be used (no GPU adapter, unknown backend).
    #[error("device error: {0}")]
    Device(String),
    /// A backend that lacks a kernel for this op or dtype.
    #[error("{backend} backend: {msg}")]
    Unsupported {
        /// Name of the backend.
        backend: String,
        /// What it lacks.
        msg: String,
    },
    /// A stream that was closed, or whose device was disabled, or taken before `shutdown()`.
    #[error(
        "stream {index} on {device} is closed (generation {generation} is stale): \
         take a new stream with lazuli::new_stream or lazuli::default_stream"
    )]
    StreamClosed {
        /// The device of the stream, as text.
        device: String,
        /// The stream's index.
        index: u32,
        /// The generation the stream value carries.
        generation: u64,
    },
    /// The library is shutting down (process exit or `shutdown()` in progress).
    #[error("lazuli is shut down: no new work is accepted")]
    ShutDown,
    /// A GPU error: validation, out-of-memory, lost device, timeout.
    #[error("gpu: {0}")]
    Gpu(String),
    /// An evaluation that failed earlier; reading its result repeats the cause.
    #[error("evaluation failed: {0}")]
    Eval(String),
}

impl Error {
    pub(crate) fn shape(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Shape { op, msg: msg.into() }
    }
    pub(crate) fn invalid(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Invalid { op, msg: msg.into() }
    }
    pub(crate) fn dtype(op: &'static str, dtype: DType, msg: impl Into<String>) -> Self {
        Error::DType { op, dtype, msg: msg.into() }
    }
}
