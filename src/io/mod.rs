//! Reading and writing arrays in the formats other tools use: NumPy's `.npy` and `.npz`,
//! `.safetensors`, and (reading only) unquantised tensors of GGUF files.
//!
//! | format | save | load | in memory |
//! | --- | --- | --- | --- |
//! | `.npy`, one array | [`save_npy`] | [`load_npy`] | [`npy_to_bytes`], [`npy_from_bytes`] |
//! | `.npz`, named arrays | [`save_npz`], [`save_npz_compressed`] | [`load_npz`] | [`npz_to_bytes`], [`npz_from_bytes`] |
//! | `.safetensors` | [`save_safetensors`], [`save_safetensors_with_metadata`] | [`load_safetensors`], [`load_safetensors_with_metadata`] | [`safetensors_to_bytes`], [`safetensors_from_bytes`] |
//! | GGUF | — | [`load_gguf`] | [`gguf_from_bytes`] |
//!
//! ```
//! use lazuli::{Array, Params, io};
//! let dir = std::env::temp_dir().join(format!("lazuli-io-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//!
//! let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
//! io::save_npy(dir.join("a.npy"), &a.transpose(&[1, 0])?)?;
//! let back = io::load_npy(dir.join("a.npy"))?;
//! assert_eq!(back.shape(), [3, 2]);
//! assert_eq!(back.to_vec::<f32>()?, vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
//!
//! // Named collections: anything that iterates (name, array) pairs, a `Params` included.
//! let mut p = Params::new();
//! p.insert("w", a.clone());
//! p.insert("b", Array::from_slice(&[0.5f32], &[1])?);
//! io::save_safetensors(dir.join("model.safetensors"), &p)?;
//! let loaded: Params = io::load_safetensors(dir.join("model.safetensors"))?.into_iter().collect();
//! assert_eq!(loaded["w"].to_vec::<f32>()?, a.to_vec::<f32>()?);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # Ok::<(), lazuli::Error>(())
//! ```
//!
//! ## Conventions
//!
//! - **Saving evaluates** the arrays (on whatever device they live; GPU data is read
//!   back) and writes them row-major, whatever view (a transpose...) they are.
//! - **Loading gives CPU arrays**, evaluated, on the CPU's default stream; ops on other
//!   devices copy them when they run.
//! - **Collections.** Loaders return `Vec<(String, Array)>` in the file's order (the
//!   entry order of an `.npz`, the data order of a `.safetensors` or GGUF file), since
//!   [`Params`](crate::Params) orders by name; `.into_iter().collect::<Params>()` turns
//!   one into the other. Savers take any `IntoIterator` of `(name, array)` pairs, where
//!   the name is `AsRef<str>` and the array an `Array` or `&Array`: `&Params`, a `Vec`
//!   that a loader returned, or `[("w", &w)]`. Repeated or empty names are an error.
//! - **Dtypes.** Every lazuli dtype round-trips through `.safetensors`; `.npy`/`.npz`
//!   take all but `bf16`, which NumPy lacks: saving it is an [`Error::DType`]
//!   that says to use safetensors or convert (`astype(DType::F32)` is exact). Stored
//!   types lazuli lacks are widened when that is lossless — `u8`/`u16` load as `U32`,
//!   `i8`/`i16` as `I32` — so such an array saves back wider. Others (`u64`, complex,
//!   `f128`, fp8, strings, objects, quantised GGUF blocks...) are an
//!   [`Error::Format`] naming the type. Booleans load as 0 or 1
//!   whatever non-zero byte the file holds.
//! - **Bad files** (corrupt, truncated, a header that contradicts the data) are an
//!   [`Error::Format`] saying what and where, never a panic;
//!   sizes a header declares are checked against the bytes present before anything is
//!   allocated. Failing to open, read or write a file is an
//!   [`Error::Io`] holding the [`std::io::Error`].
//! - **Files are memory-mapped** for loading, so each tensor is copied once, from the
//!   page cache into its array. Like every mmap reader (NumPy's `mmap_mode`, the
//!   safetensors crate), this assumes no other process truncates the file while it
//!   loads.

mod gguf;
mod npy;
mod npy_header;
mod npz;
mod safetensors;

use std::borrow::{Borrow, Cow};
use std::collections::HashSet;
use std::ops::Deref;
use std::path::Path;

use crate::array::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::stream::{Device, default_stream, with_stream};

pub use gguf::{Gguf, GgufValue, gguf_from_bytes, load_gguf};
pub use npy::{load_npy, npy_from_bytes, npy_to_bytes, save_npy};
pub use npz::{load_npz, npz_from_bytes, npz_to_bytes, save_npz, save_npz_compressed};
pub use safetensors::{
    load_safetensors, load_safetensors_with_metadata, safetensors_from_bytes, safetensors_to_bytes, save_safetensors,
    save_safetensors_with_metadata,
};

/// Named arrays in a file's order: what the collection loaders return (see the module
/// docs; `.into_iter().collect::<Params>()` makes a [`Params`](crate::Params)).
pub type Named = Vec<(String, Array)>;

/// An element type as a file stores it: a lazuli dtype, or a narrow integer that
/// widens losslessly on load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stored {
    /// Stored in the dtype's own layout.
    Same(DType),
    /// `u8`, loaded as `U32`.
    U8,
    /// `u16`, loaded as `U32`.
    U16,
    /// `i8`, loaded as `I32`.
    I8,
    /// `i16`, loaded as `I32`.
    I16,
}

impl Stored {
    /// Bytes per stored element.
    pub(crate) fn size(self) -> usize {
        match self {
            Stored::Same(d) => d.size(),
            Stored::U8 | Stored::I8 => 1,
            Stored::U16 | Stored::I16 => 2,
        }
    }

    /// The dtype the array gets.
    pub(crate) fn dtype(self) -> DType {
        match self {
            Stored::Same(d) => d,
            Stored::U8 | Stored::U16 => DType::U32,
            Stored::I8 | Stored::I16 => DType::I32,
        }
    }
}

/// Bytes that `shape` of `stored` takes, checked against the `available` bytes (a
/// header can claim any shape) and against the size limit of the dtype it loads as.
/// `what` names the array in the message.
pub(crate) fn data_len(
    op: &'static str,
    what: &str,
    stored: Stored,
    shape: &[usize],
    available: usize,
) -> Result<usize> {
    let too_big = || Error::format(op, format!("{what}: shape {shape:?} is too large to address"));
    let needed = crate::shape::byte_size(shape, stored.size()).ok_or_else(too_big)?;
    crate::shape::byte_size(shape, stored.dtype().size()).ok_or_else(too_big)?;
    if needed > available {
        return Err(Error::format(
            op,
            format!(
                "{what}: shape {shape:?} of {} bytes per element needs {needed} bytes of data, the file has {available}",
                stored.size()
            ),
        ));
    }
    Ok(needed)
}

/// `data` (little-endian elements of `stored`, exactly the shape's size) in the host
/// layout of `stored.dtype()`: narrow integers widened, booleans made 0 or 1.
pub(crate) fn to_host(stored: Stored, data: &[u8]) -> Cow<'_, [u8]> {
    fn widen<const N: usize>(data: &[u8], f: impl Fn([u8; N]) -> [u8; 4]) -> Cow<'static, [u8]> {
        Cow::Owned(data.chunks_exact(N).flat_map(|c| f(c.try_into().expect("chunks of N"))).collect())
    }
    match stored {
        Stored::Same(DType::Bool) if data.iter().any(|&b| b > 1) => {
            Cow::Owned(data.iter().map(|&b| u8::from(b != 0)).collect())
        }
        Stored::Same(
            DType::Bool | DType::U32 | DType::I32 | DType::I64 | DType::F16 | DType::BF16 | DType::F32 | DType::F64,
        ) => Cow::Borrowed(data),
        Stored::U8 => widen::<1>(data, |b| u32::from(b[0]).to_le_bytes()),
        Stored::U16 => widen::<2>(data, |b| u32::from(u16::from_le_bytes(b)).to_le_bytes()),
        Stored::I8 => widen::<1>(data, |b| i32::from(b[0] as i8).to_le_bytes()),
        Stored::I16 => widen::<2>(data, |b| i32::from(i16::from_le_bytes(b)).to_le_bytes()),
    }
}

/// An evaluated array on the CPU's default stream holding `host` (host layout of
/// `dtype`, row-major).
pub(crate) fn cpu_array(host: &[u8], shape: &[usize], dtype: DType) -> Result<Array> {
    with_stream(&default_stream(Device::cpu())?, || Array::from_bytes(host, shape, dtype))
}

/// A file's bytes: memory-mapped, or empty (an empty file cannot be mapped).
pub(crate) enum Mapped {
    /// The mapping of a non-empty file.
    Map(memmap2::Mmap),
    /// An empty file.
    Empty,
}

impl Deref for Mapped {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Mapped::Map(m) => m,
            Mapped::Empty => &[],
        }
    }
}

/// Maps `path` read-only.
pub(crate) fn map_file(op: &'static str, path: &Path) -> Result<Mapped> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(op, path, e))?;
    let len = file.metadata().map_err(|e| Error::io(op, path, e))?.len();
    if len == 0 {
        return Ok(Mapped::Empty);
    }
    // SAFETY: the mapping is read-only and private to this call: arrays copy what they
    // need before it is dropped. Another process truncating the file meanwhile would
    // fault (the documented assumption of every mmap reader).
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(op, path, e))?;
    Ok(Mapped::Map(map))
}

/// `e` with `op` and `path` filled in when it is a [`Error::Format`] from parsing bytes,
/// so that a file's loader reports the file.
pub(crate) fn at_path(e: Error, op: &'static str, path: &Path) -> Error {
    match e {
        Error::Format { path: None, msg, cause, .. } => {
            Error::Format { op, path: Some(path.to_path_buf()), msg, cause }
        }
        other => other,
    }
}

/// [`Error::Format`] with the parser's own error as its source.
pub(crate) fn format_cause(
    op: &'static str,
    msg: impl Into<String>,
    cause: impl std::error::Error + Send + Sync + 'static,
) -> Error {
    Error::Format { op, path: None, msg: msg.into(), cause: Some(crate::error::Cause::new(cause)) }
}

/// Named arrays to save, with their names checked (none empty, none repeated) and all
/// of them evaluated in one [`crate::eval()`] call, so that shared work runs once.
pub(crate) fn collect_named<S: AsRef<str>, A: Borrow<Array>>(
    op: &'static str,
    arrays: impl IntoIterator<Item = (S, A)>,
) -> Result<Vec<(String, A)>> {
    let named: Vec<(String, A)> = arrays.into_iter().map(|(s, a)| (s.as_ref().to_string(), a)).collect();
    let mut seen = HashSet::new();
    for (name, _) in &named {
        if name.is_empty() {
            return Err(Error::invalid(op, "an array has an empty name; give every array a name"));
        }
        if !seen.insert(name.as_str()) {
            return Err(Error::invalid(op, format!("the name {name:?} is given to more than one array")));
        }
    }
    let refs: Vec<&Array> = named.iter().map(|(_, a)| a.borrow()).collect();
    crate::eval::eval(&refs)?;
    Ok(named)
}

/// Errors if `names` repeats a name (a loaded collection must be a map); `kind` says
/// what the names are ("tensor name").
pub(crate) fn check_unique<'a>(op: &'static str, kind: &str, names: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let mut seen = HashSet::new();
    for name in names {
        if !seen.insert(name) {
            return Err(Error::format(op, format!("the {kind} {name:?} occurs more than once")));
        }
    }
    Ok(())
}
