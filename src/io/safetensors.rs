//! The `.safetensors` format, through the `safetensors` crate: an 8-byte little-endian
//! header length, a JSON header (each tensor's dtype, shape and data offsets, plus an
//! optional `__metadata__` map of strings), then the data.
//!
//! Every lazuli dtype, `bf16` included, saves and loads as itself. Tensors load in data
//! order, which for files this crate or the Python package wrote is by descending
//! alignment, then by name.

use std::borrow::{Borrow, Cow};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use ::safetensors::tensor::{Dtype, SafeTensorError, SafeTensors, View};

use super::{Named, Stored, at_path, collect_named, cpu_array, data_len, format_cause, map_file, to_host};
use crate::array::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// Writes `arrays` to `path` as a `.safetensors` file (created or replaced).
///
/// `arrays` is any collection of `(name, array)` pairs (`&Params`, a loaded `Vec`,
/// `[("w", &w)]`); they are evaluated together and written row-major. The file is
/// written beside `path` and then renamed over it, so a reader never sees half a file.
pub fn save_safetensors<S: AsRef<str>, A: Borrow<Array>>(
    path: impl AsRef<Path>,
    arrays: impl IntoIterator<Item = (S, A)>,
) -> Result<()> {
    save("save_safetensors", path.as_ref(), arrays, None)
}

/// [`save_safetensors`] with a `__metadata__` map of strings in the header (what
/// Hugging Face tools put there: `{"format": "pt"}`, a model's configuration...).
pub fn save_safetensors_with_metadata<S: AsRef<str>, A: Borrow<Array>>(
    path: impl AsRef<Path>,
    arrays: impl IntoIterator<Item = (S, A)>,
    metadata: &BTreeMap<String, String>,
) -> Result<()> {
    save("save_safetensors_with_metadata", path.as_ref(), arrays, Some(metadata))
}

/// The bytes of a `.safetensors` file holding `arrays` and, if given, `metadata`.
pub fn safetensors_to_bytes<S: AsRef<str>, A: Borrow<Array>>(
    arrays: impl IntoIterator<Item = (S, A)>,
    metadata: Option<&BTreeMap<String, String>>,
) -> Result<Vec<u8>> {
    const OP: &str = "safetensors_to_bytes";
    let tensors = prepare(OP, arrays)?;
    ::safetensors::serialize(tensors.iter().map(|(n, t)| (n, t)), metadata.map(to_hash))
        .map_err(|e| format_cause(OP, "serialising failed", e))
}

/// Reads the `.safetensors` file at `path` (memory-mapped: each tensor is copied once,
/// into its array): its tensors in data order. Collect into [`Params`](crate::Params)
/// to look them up by name.
///
/// `u8`/`u16` tensors widen to `U32`, `i8`/`i16` to `I32`; `u64`, complex, fp8, fp6
/// and fp4 tensors are an [`Error::Format`] naming the dtype.
pub fn load_safetensors(path: impl AsRef<Path>) -> Result<Named> {
    const OP: &str = "load_safetensors";
    let path = path.as_ref();
    let bytes = map_file(OP, path)?;
    decode(OP, &bytes).map(|(t, _)| t).map_err(|e| at_path(e, OP, path))
}

/// [`load_safetensors`], also returning the header's `__metadata__` map (empty when
/// the file has none).
pub fn load_safetensors_with_metadata(path: impl AsRef<Path>) -> Result<(Named, BTreeMap<String, String>)> {
    const OP: &str = "load_safetensors_with_metadata";
    let path = path.as_ref();
    let bytes = map_file(OP, path)?;
    decode(OP, &bytes).map_err(|e| at_path(e, OP, path))
}

/// Reads a `.safetensors` file's bytes: tensors and metadata, as
/// [`load_safetensors_with_metadata`].
pub fn safetensors_from_bytes(bytes: &[u8]) -> Result<(Named, BTreeMap<String, String>)> {
    decode("safetensors_from_bytes", bytes)
}

/// A tensor ready to serialise: its host bytes, downloaded once.
struct Tensor {
    dtype: Dtype,
    shape: Vec<usize>,
    data: Vec<u8>,
}

impl View for &Tensor {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.data)
    }
    fn data_len(&self) -> usize {
        self.data.len()
    }
}

fn prepare<S: AsRef<str>, A: Borrow<Array>>(
    op: &'static str,
    arrays: impl IntoIterator<Item = (S, A)>,
) -> Result<Vec<(String, Tensor)>> {
    collect_named(op, arrays)?
        .into_iter()
        .map(|(name, a)| {
            let a = a.borrow();
            let dtype = match a.dtype() {
                DType::Bool => Dtype::BOOL,
                DType::U32 => Dtype::U32,
                DType::I32 => Dtype::I32,
                DType::I64 => Dtype::I64,
                DType::F16 => Dtype::F16,
                DType::BF16 => Dtype::BF16,
                DType::F32 => Dtype::F32,
                DType::F64 => Dtype::F64,
            };
            Ok((name, Tensor { dtype, shape: a.shape().to_vec(), data: a.to_bytes()? }))
        })
        .collect()
}

fn save<S: AsRef<str>, A: Borrow<Array>>(
    op: &'static str,
    path: &Path,
    arrays: impl IntoIterator<Item = (S, A)>,
    metadata: Option<&BTreeMap<String, String>>,
) -> Result<()> {
    let tensors = prepare(op, arrays)?;
    ::safetensors::serialize_to_file(tensors.iter().map(|(n, t)| (n, t)), metadata.map(to_hash), path).map_err(|e| {
        match e {
            SafeTensorError::IoError(e) => Error::io(op, path, e),
            other => format_cause(op, "serialising failed", other),
        }
    })
}

fn to_hash(m: &BTreeMap<String, String>) -> HashMap<String, String> {
    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn decode(op: &'static str, bytes: &[u8]) -> Result<(Named, BTreeMap<String, String>)> {
    // read_metadata validates the header against the buffer: offsets in order, no gaps,
    // the last one at the end of the file.
    let (header_len, meta) =
        SafeTensors::read_metadata(bytes).map_err(|e| format_cause(op, "not a valid .safetensors file", e))?;
    let data = bytes.get(8 + header_len..).unwrap_or_default();
    let mut infos: Vec<_> = meta.tensors().into_iter().collect();
    infos.sort_by(|(a, x), (b, y)| x.data_offsets.cmp(&y.data_offsets).then(a.cmp(b)));
    let mut out = Vec::with_capacity(infos.len());
    for (name, info) in infos {
        let what = format!("tensor {name:?}");
        let stored = stored_of(info.dtype).ok_or_else(|| {
            Error::format(
                op,
                format!(
                    "{what} has dtype {:?}, which lazuli cannot hold \
                     (it loads BOOL, U8-U32, I8-I64, F16, BF16, F32, F64)",
                    info.dtype
                ),
            )
        })?;
        let (start, end) = info.data_offsets;
        let raw = data
            .get(start..end)
            .ok_or_else(|| Error::format(op, format!("{what}: data offsets {start}..{end} lie outside the file")))?;
        if data_len(op, &what, stored, &info.shape, raw.len())? != raw.len() {
            return Err(Error::format(
                op,
                format!("{what}: shape {:?} does not fill offsets {start}..{end}", info.shape),
            ));
        }
        out.push((name, cpu_array(&to_host(stored, raw), &info.shape, stored.dtype())?));
    }
    let metadata = meta.metadata().as_ref().map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
    Ok((out, metadata.unwrap_or_default()))
}

/// How a safetensors dtype loads, or `None` if lazuli cannot hold it.
fn stored_of(dtype: Dtype) -> Option<Stored> {
    Some(match dtype {
        Dtype::BOOL => Stored::Same(DType::Bool),
        Dtype::U8 => Stored::U8,
        Dtype::U16 => Stored::U16,
        Dtype::U32 => Stored::Same(DType::U32),
        Dtype::I8 => Stored::I8,
        Dtype::I16 => Stored::I16,
        Dtype::I32 => Stored::Same(DType::I32),
        Dtype::I64 => Stored::Same(DType::I64),
        Dtype::F16 => Stored::Same(DType::F16),
        Dtype::BF16 => Stored::Same(DType::BF16),
        Dtype::F32 => Stored::Same(DType::F32),
        Dtype::F64 => Stored::Same(DType::F64),
        // The crate's enum is non-exhaustive: new dtypes land here too.
        _ => return None,
    })
}
