//! The crate's error type. Every fallible public call returns [`Result`].
//!
//! Errors keep their cause: a node whose input failed reports
//! [`Error::Eval`] naming the input's op, with the input's own error as its
//! [`source`](std::error::Error::source). Match on variants, not on message text.

use std::path::PathBuf;
use std::sync::Arc;

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
    /// An allocation that cannot be satisfied: larger than a device limit, or refused by
    /// the allocator. Reported before anything is allocated where the size is known.
    #[error("{what}: cannot allocate {} ({requested} bytes){}", human_bytes(*requested), limit.map(|l| format!(": the limit is {} ({l} bytes)", human_bytes(l))).unwrap_or_default())]
    OutOfMemory {
        /// What needed the memory ("cpu: sum output", "gpu: upload"...).
        what: String,
        /// Bytes asked for.
        requested: u64,
        /// The limit that refused it, when one is known (a device's buffer limit).
        limit: Option<u64>,
    },
    /// A GPU error: validation, out-of-memory, lost device, timeout.
    #[error("gpu: {0}")]
    Gpu(String),
    /// An input of this array failed to evaluate: `op` is the input's primitive, `cause`
    /// its error (the first failure along the chain: later nodes pass it on unchanged).
    #[error("evaluation of {op} failed: {cause}")]
    Eval {
        /// Name of the primitive whose evaluation failed ("exp", "matmul"...).
        op: &'static str,
        /// Why it failed.
        #[source]
        cause: Arc<Error>,
    },
    /// A file could not be opened, read or written ([`crate::io`]); `cause` holds the
    /// [`std::io::Error`] (see [`Cause::downcast_ref`]).
    #[error("{op}: {}: {cause}", path.display())]
    Io {
        /// The call that failed ("load_npy", "save_safetensors"...).
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        cause: Cause,
    },
    /// Bytes that are not a valid file of the format being read (corrupt, truncated, a
    /// header that contradicts the data), or a valid file holding something lazuli cannot
    /// represent (a complex or quantised dtype): `msg` says which ([`crate::io`]).
    #[error("{op}: {}{msg}{}", path.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default(), cause.as_ref().map(|c| format!(": {c}")).unwrap_or_default())]
    Format {
        /// The call that failed ("load_npy", "gguf_from_bytes"...).
        op: &'static str,
        /// The file, when the bytes came from one.
        path: Option<PathBuf>,
        /// What is wrong, with the offsets or values involved.
        msg: String,
        /// The parser's own error, when a library (zip, safetensors) reported it.
        #[source]
        cause: Option<Cause>,
    },
    /// A broken invariant inside lazuli (a bug: please report it).
    #[error("internal error: {0}")]
    Internal(String),
}

/// The error of another library or of the operating system, kept as the
/// [`source`](std::error::Error::source) of an [`Error`]. It is shared (cloning an
/// `Error` clones the handle) and compares equal when the messages do, so that `Error`
/// stays `Clone + PartialEq` while the original error remains reachable.
#[derive(Debug, Clone)]
pub struct Cause(Arc<dyn std::error::Error + Send + Sync + 'static>);

impl Cause {
    /// Wraps `error`.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Cause {
        Cause(Arc::new(error))
    }
    /// The original error as a `T` (`std::io::Error` for [`Error::Io`]), if it is one.
    pub fn downcast_ref<T: std::error::Error + 'static>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

// Transparent: the wrapped error's own source comes next in the chain, so a report that
// walks sources does not print the wrapped message twice.
impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Cause) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

/// `bytes` with a binary unit, for messages ("4.0 TiB").
fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 { format!("{bytes} B") } else { format!("{v:.1} {}", UNITS[u]) }
}

/// Constructors, public so that third-party backends report errors in the same terms.
impl Error {
    /// True for [`Error::ShutDown`], also behind [`Error::Eval`] causes: the process is
    /// exiting (or `shutdown()` ran) and lazuli refused the work. A worker thread that owns
    /// streams should take it as "stop now" and return quietly:
    ///
    /// ```
    /// fn worker() -> lazuli::Result<()> {
    ///     loop {
    ///         let a = lazuli::random::normal(&lazuli::random::key(0)?, &[64, 64], 0.0, 1.0, lazuli::DType::F32)?;
    ///         a.matmul(&a)?.eval()?;
    ///         # return Ok(());
    ///     }
    /// }
    /// std::thread::spawn(|| match worker() {
    ///     Err(e) if !e.is_shutdown() => eprintln!("worker: {e}"),
    ///     _ => {} // finished, or the process is exiting: nothing to report
    /// });
    /// ```
    pub fn is_shutdown(&self) -> bool {
        matches!(self.root_cause(), Error::ShutDown)
    }
    /// [`Error::Shape`].
    pub fn shape(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Shape { op, msg: msg.into() }
    }
    /// [`Error::Invalid`].
    pub fn invalid(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Invalid { op, msg: msg.into() }
    }
    /// [`Error::DType`].
    pub fn dtype(op: &'static str, dtype: DType, msg: impl Into<String>) -> Self {
        Error::DType { op, dtype, msg: msg.into() }
    }
    /// [`Error::Unsupported`]: `backend` lacks what `msg` says.
    pub fn unsupported(backend: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::Unsupported { backend: backend.into(), msg: msg.into() }
    }
    /// [`Error::OutOfMemory`]: `what` could not get `requested` bytes (`limit`, if known).
    pub fn out_of_memory(what: impl Into<String>, requested: u64, limit: Option<u64>) -> Self {
        Error::OutOfMemory { what: what.into(), requested, limit }
    }
    /// [`Error::Device`].
    pub fn device(msg: impl Into<String>) -> Self {
        Error::Device(msg.into())
    }
    /// [`Error::Io`]: `op` failed on `path` because of `cause`.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, cause: std::io::Error) -> Self {
        Error::Io { op, path: path.into(), cause: Cause::new(cause) }
    }
    /// [`Error::Format`] without a file or a library error (in-memory parsing); the
    /// `crate::io` loaders add the path.
    pub fn format(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Format { op, path: None, msg: msg.into(), cause: None }
    }
    /// [`Error::Eval`]: the evaluation of `op` failed because of `cause`. A cause that is
    /// itself an `Eval` is passed on unchanged, so chains do not nest.
    pub fn eval(op: &'static str, cause: Error) -> Self {
        if let Error::Eval { .. } = cause { cause } else { Error::Eval { op, cause: Arc::new(cause) } }
    }
    /// The error at the root of an [`Error::Eval`] chain (itself for other variants).
    pub fn root_cause(&self) -> &Error {
        if let Error::Eval { cause, .. } = self { cause.root_cause() } else { self }
    }
}
