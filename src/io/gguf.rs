//! Reading GGUF files (ggml's format for llama.cpp models, versions 2 and 3,
//! little-endian): the metadata and the unquantised tensors.
//!
//! Layout (ggml's `docs/gguf.md`): magic `GGUF`, version (u32), tensor count and
//! key-value count (u64), the key-value pairs (a string key, a u32 value type, the
//! value), one info record per tensor (name, dimension count u32, dimensions u64 each,
//! ggml type u32, data offset u64), padding to the alignment (`general.alignment`,
//! default 32), then the tensor data; each offset counts from the data's start.
//!
//! Shapes: GGUF lists dimensions fastest-varying first (ggml's `ne[0]` is the length of
//! a row), so a lazuli shape is that list reversed, as gguf-py and MLX read it: a
//! `[rows, cols]` array that gguf-py wrote loads as `[rows, cols]`.

use std::path::Path;

use super::{Stored, at_path, check_unique, cpu_array, data_len, map_file, to_host};
use crate::array::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// A GGUF metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum GgufValue {
    /// `UINT8`.
    U8(u8),
    /// `INT8`.
    I8(i8),
    /// `UINT16`.
    U16(u16),
    /// `INT16`.
    I16(i16),
    /// `UINT32`.
    U32(u32),
    /// `INT32`.
    I32(i32),
    /// `FLOAT32`.
    F32(f32),
    /// `BOOL`.
    Bool(bool),
    /// `STRING` (UTF-8).
    String(String),
    /// `ARRAY`: values of one type (arrays may nest).
    Array(Vec<GgufValue>),
    /// `UINT64`.
    U64(u64),
    /// `INT64`.
    I64(i64),
    /// `FLOAT64`.
    F64(f64),
}

/// What a GGUF file holds: see [`load_gguf`].
#[derive(Debug, Clone)]
pub struct Gguf {
    /// The format version (2 or 3).
    pub version: u32,
    /// The key-value metadata, in file order (`general.architecture`, tokenizer
    /// vocabularies...).
    pub metadata: Vec<(String, GgufValue)>,
    /// The tensors, in file order, as evaluated CPU arrays (shapes reversed from
    /// ggml's dimension order: see the module docs).
    pub tensors: super::Named,
}

impl Gguf {
    /// The metadata value under `key`.
    pub fn get(&self, key: &str) -> Option<&GgufValue> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The tensor named `name`.
    pub fn tensor(&self, name: &str) -> Option<&Array> {
        self.tensors.iter().find(|(k, _)| k == name).map(|(_, a)| a)
    }
}

/// Reads the GGUF file at `path` (memory-mapped: each tensor is copied once).
///
/// Tensors of types F32, F16, BF16, F64, I32 and I64 load as those dtypes, I8 and I16
/// widen to `I32`. A quantised tensor (Q4_0, Q8_0, Q4_K, IQ2_XXS...) is an
/// [`Error::Format`] naming its type and the tensor: lazuli has no quantised dtypes.
/// Big-endian files and version 1 are refused.
pub fn load_gguf(path: impl AsRef<Path>) -> Result<Gguf> {
    const OP: &str = "load_gguf";
    let path = path.as_ref();
    let bytes = map_file(OP, path)?;
    decode(OP, &bytes).map_err(|e| at_path(e, OP, path))
}

/// Reads a GGUF file's bytes (see [`load_gguf`]).
pub fn gguf_from_bytes(bytes: &[u8]) -> Result<Gguf> {
    decode("gguf_from_bytes", bytes)
}

/// Nesting of arrays beyond this is not a real file (and would risk the stack).
const MAX_DEPTH: usize = 8;
/// ggml's `GGML_MAX_DIMS`.
const MAX_DIMS: u32 = 4;
const DEFAULT_ALIGNMENT: u64 = 32;

fn decode(op: &'static str, bytes: &[u8]) -> Result<Gguf> {
    let mut r = Reader { buf: bytes, pos: 0 };
    let fail = |msg: String| Error::format(op, msg);
    if r.take(4).map_err(fail)? != b"GGUF" {
        return Err(Error::format(op, "not a GGUF file (it does not start with \"GGUF\")"));
    }
    let version = r.u32().map_err(fail)?;
    match version {
        2 | 3 => {}
        1 => return Err(Error::format(op, "GGUF version 1 is not supported (versions 2 and 3 are)")),
        v if (2..=3).contains(&v.swap_bytes()) => {
            return Err(Error::format(op, "big-endian GGUF files are not supported (convert with gguf-py)"));
        }
        v => return Err(Error::format(op, format!("GGUF version {v} is not supported (versions 2 and 3 are)"))),
    }
    let tensor_count = r.u64().map_err(fail)?;
    let kv_count = r.u64().map_err(fail)?;

    // Capacities are bounded by what the remaining bytes could hold (a key-value pair
    // takes at least 12 bytes, a tensor record 24), whatever the counts claim.
    let mut metadata = Vec::with_capacity(r.cap(kv_count, 12));
    for _ in 0..kv_count {
        let key = r.string().map_err(fail)?;
        let ty = r.u32().map_err(fail)?;
        let value = r.value(ty, 0).map_err(|m| fail(format!("metadata {key:?}: {m}")))?;
        metadata.push((key, value));
    }
    check_unique(op, "metadata key", metadata.iter().map(|(k, _)| k.as_str()))?;

    let alignment = match metadata.iter().find(|(k, _)| k == "general.alignment").map(|(_, v)| v) {
        None => DEFAULT_ALIGNMENT,
        Some(GgufValue::U32(a)) if *a > 0 => u64::from(*a),
        Some(other) => {
            return Err(Error::format(op, format!("general.alignment is {other:?}; it must be a non-zero UINT32")));
        }
    };

    struct Info {
        name: String,
        shape: Vec<usize>,
        ty: u32,
        offset: u64,
    }
    let mut infos = Vec::with_capacity(r.cap(tensor_count, 24));
    for _ in 0..tensor_count {
        let name = r.string().map_err(fail)?;
        let in_tensor = |m: String| fail(format!("tensor {name:?}: {m}"));
        let n_dims = r.u32().map_err(in_tensor)?;
        if n_dims > MAX_DIMS {
            return Err(in_tensor(format!("{n_dims} dimensions; ggml allows at most {MAX_DIMS}")));
        }
        let mut shape = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            let d = r.u64().map_err(in_tensor)?;
            shape.push(usize::try_from(d).map_err(|_| in_tensor(format!("dimension {d} does not fit usize")))?);
        }
        shape.reverse();
        let ty = r.u32().map_err(in_tensor)?;
        let offset = r.u64().map_err(in_tensor)?;
        infos.push(Info { name, shape, ty, offset });
    }
    check_unique(op, "tensor name", infos.iter().map(|i| i.name.as_str()))?;

    let data_start = (r.pos as u64).next_multiple_of(alignment);
    let data = usize::try_from(data_start).ok().and_then(|s| bytes.get(s..)).unwrap_or_default();
    let mut tensors = Vec::with_capacity(infos.len());
    for info in infos {
        let what = format!("tensor {:?}", info.name);
        let stored = stored_of(info.ty).map_err(|ty| fail(format!("{what} has type {ty}, {}", refusal(info.ty))))?;
        let rest = usize::try_from(info.offset).ok().and_then(|o| data.get(o..)).ok_or_else(|| {
            fail(format!("{what}: offset {} lies past the end of the data ({} bytes)", info.offset, data.len()))
        })?;
        let len = data_len(op, &what, stored, &info.shape, rest.len())?;
        tensors.push((info.name, cpu_array(&to_host(stored, &rest[..len]), &info.shape, stored.dtype())?));
    }
    Ok(Gguf { version, metadata, tensors })
}

/// How a ggml tensor type loads, or its name when lazuli cannot hold it.
fn stored_of(ty: u32) -> std::result::Result<Stored, String> {
    Ok(match ty {
        0 => Stored::Same(DType::F32),
        1 => Stored::Same(DType::F16),
        24 => Stored::I8,
        25 => Stored::I16,
        26 => Stored::Same(DType::I32),
        27 => Stored::Same(DType::I64),
        28 => Stored::Same(DType::F64),
        30 => Stored::Same(DType::BF16),
        _ => return Err(type_name(ty)),
    })
}

/// ggml's name for a tensor type (`ggml_type`), for messages.
fn type_name(ty: u32) -> String {
    const QUANTISED: &[(u32, &str)] = &[
        (2, "Q4_0"),
        (3, "Q4_1"),
        (6, "Q5_0"),
        (7, "Q5_1"),
        (8, "Q8_0"),
        (9, "Q8_1"),
        (10, "Q2_K"),
        (11, "Q3_K"),
        (12, "Q4_K"),
        (13, "Q5_K"),
        (14, "Q6_K"),
        (15, "Q8_K"),
        (16, "IQ2_XXS"),
        (17, "IQ2_XS"),
        (18, "IQ3_XXS"),
        (19, "IQ1_S"),
        (20, "IQ4_NL"),
        (21, "IQ3_S"),
        (22, "IQ2_S"),
        (23, "IQ4_XS"),
        (29, "IQ1_M"),
        (34, "TQ1_0"),
        (35, "TQ2_0"),
        (39, "MXFP4"),
    ];
    match QUANTISED.iter().find(|(t, _)| *t == ty) {
        Some((_, name)) => format!("{name} ({ty})"),
        None => format!("{ty}"),
    }
}

/// Why a type is refused, after its name.
fn refusal(ty: u32) -> &'static str {
    if type_name(ty).contains('(') {
        "a quantised type: lazuli has no quantised dtypes (dequantise it with gguf-py, or use an F16/BF16/F32 file)"
    } else {
        "which is not a ggml type this reader knows"
    }
}

/// A cursor over the file's bytes; every read checks the length first.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> std::result::Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len()).ok_or_else(|| {
            format!("the file ends at byte {} inside a field of {n} bytes at byte {}", self.buf.len(), self.pos)
        })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> std::result::Result<[u8; N], String> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }

    fn u32(&mut self) -> std::result::Result<u32, String> {
        self.array().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> std::result::Result<u64, String> {
        self.array().map(u64::from_le_bytes)
    }

    /// A capacity for `count` items of at least `min_size` bytes each, no more than
    /// the remaining bytes could hold.
    fn cap(&self, count: u64, min_size: usize) -> usize {
        let fit = (self.buf.len() - self.pos) / min_size;
        usize::try_from(count).map_or(fit, |c| c.min(fit))
    }

    fn string(&mut self) -> std::result::Result<String, String> {
        let at = self.pos;
        let len = self.u64()?;
        let len = usize::try_from(len).map_err(|_| format!("string length {len} at byte {at} is too large"))?;
        let bytes = self.take(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|e| format!("the string at byte {at} is not UTF-8: {e}"))
    }

    fn value(&mut self, ty: u32, depth: usize) -> std::result::Result<GgufValue, String> {
        Ok(match ty {
            0 => GgufValue::U8(self.array::<1>()?[0]),
            1 => GgufValue::I8(self.array::<1>()?[0] as i8),
            2 => GgufValue::U16(u16::from_le_bytes(self.array()?)),
            3 => GgufValue::I16(i16::from_le_bytes(self.array()?)),
            4 => GgufValue::U32(self.u32()?),
            5 => GgufValue::I32(i32::from_le_bytes(self.array()?)),
            6 => GgufValue::F32(f32::from_le_bytes(self.array()?)),
            7 => GgufValue::Bool(self.array::<1>()?[0] != 0),
            8 => GgufValue::String(self.string()?),
            9 => {
                if depth >= MAX_DEPTH {
                    return Err(format!("arrays nested deeper than {MAX_DEPTH} levels"));
                }
                let elem = self.u32()?;
                let count = self.u64()?;
                let min_size = match elem {
                    0 | 1 | 7 => 1,
                    2 | 3 => 2,
                    4..=6 => 4,
                    8 | 10..=12 => 8,
                    9 => 12,
                    other => return Err(format!("unknown value type {other} in an array")),
                };
                let mut items = Vec::with_capacity(self.cap(count, min_size));
                for _ in 0..count {
                    items.push(self.value(elem, depth + 1)?);
                }
                GgufValue::Array(items)
            }
            10 => GgufValue::U64(self.u64()?),
            11 => GgufValue::I64(i64::from_le_bytes(self.array()?)),
            12 => GgufValue::F64(f64::from_le_bytes(self.array()?)),
            other => return Err(format!("unknown value type {other} at byte {}", self.pos - 4)),
        })
    }
}
