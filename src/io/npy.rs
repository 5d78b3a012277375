//! NumPy's `.npy` format (format versions 1.0, 2.0 and 3.0): a magic string, a
//! version, a header dict and the raw data.
//!
//! Loading converts big-endian data and reorders Fortran-order data into a row-major
//! array. Saving writes version 1.0 (2.0 when the header outgrows 1.0's 64 KiB),
//! little-endian, C order, the header padded to 64 bytes as NumPy does.

use std::borrow::Cow;
use std::io::Write;
use std::path::Path;

use super::npy_header;
use super::{Stored, at_path, cpu_array, data_len, map_file, to_host};
use crate::array::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Writes `array` to `path` as a `.npy` file (created or replaced).
///
/// Evaluates the array (reading it back from the GPU if it lives there); any view
/// (a transpose, a slice) is written row-major. `bf16` is an [`Error::DType`]: NumPy has
/// no such type (save with [`super::save_safetensors`] or convert with `astype`).
pub fn save_npy(path: impl AsRef<Path>, array: &Array) -> Result<()> {
    const OP: &str = "save_npy";
    let path = path.as_ref();
    let header = header_for(OP, array)?;
    let data = array.to_bytes()?;
    let write = || -> std::io::Result<()> {
        let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
        f.write_all(&header)?;
        f.write_all(&data)?;
        f.flush()
    };
    write().map_err(|e| Error::io(OP, path, e))
}

/// `array` as the bytes of a `.npy` file ([`save_npy`] without the file).
pub fn npy_to_bytes(array: &Array) -> Result<Vec<u8>> {
    encode("npy_to_bytes", array)
}

/// Reads the `.npy` file at `path` into an evaluated CPU array.
///
/// Every dtype NumPy shares with lazuli loads as itself; `u8`/`u16` widen to `U32` and
/// `i8`/`i16` to `I32`; other dtypes (`u64`, complex, `float128`, strings, objects,
/// structured) are an [`Error::Format`] naming the dtype.
pub fn load_npy(path: impl AsRef<Path>) -> Result<Array> {
    const OP: &str = "load_npy";
    let path = path.as_ref();
    let bytes = map_file(OP, path)?;
    decode(OP, "the array", &bytes).map_err(|e| at_path(e, OP, path))
}

/// Reads a `.npy` file's bytes into an evaluated CPU array (see [`load_npy`]).
pub fn npy_from_bytes(bytes: &[u8]) -> Result<Array> {
    decode("npy_from_bytes", "the array", bytes)
}

/// The `.npy` bytes of `array`: header, then data.
pub(crate) fn encode(op: &'static str, array: &Array) -> Result<Vec<u8>> {
    let mut out = header_for(op, array)?;
    out.extend_from_slice(&array.to_bytes()?);
    Ok(out)
}

/// The `.npy` magic, version and padded header for `array`.
fn header_for(op: &'static str, array: &Array) -> Result<Vec<u8>> {
    let descr = match array.dtype() {
        DType::Bool => "|b1",
        DType::U32 => "<u4",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::F16 => "<f2",
        DType::BF16 => {
            return Err(Error::dtype(
                op,
                DType::BF16,
                "NumPy has no bfloat16: save it with lazuli::io::save_safetensors, \
                 or convert it first with astype(DType::F32), which is exact",
            ));
        }
        DType::F32 => "<f4",
        DType::F64 => "<f8",
    };
    let mut text = npy_header::write(descr, array.shape()).into_bytes();
    // NumPy pads so that the data starts on a 64-byte boundary, ending with '\n'.
    let padded = |prefix: usize| (prefix + text.len() + 1).next_multiple_of(64) - prefix;
    let (version, len_bytes) = if padded(10) <= u16::MAX as usize { (1u8, 2) } else { (2u8, 4) };
    let header_len = padded(MAGIC.len() + 2 + len_bytes);
    text.resize(header_len - 1, b' ');
    text.push(b'\n');
    let mut out = Vec::with_capacity(MAGIC.len() + 2 + len_bytes + header_len);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(header_len as u16).to_le_bytes());
    } else {
        let len = u32::try_from(header_len).map_err(|_| Error::invalid(op, "the .npy header exceeds 4 GiB"))?;
        out.extend_from_slice(&len.to_le_bytes());
    }
    out.extend_from_slice(&text);
    Ok(out)
}

/// Parses `.npy` bytes; `what` names the array in messages (an `.npz` entry).
pub(crate) fn decode(op: &'static str, what: &str, bytes: &[u8]) -> Result<Array> {
    let fail = |msg: String| Error::format(op, format!("{what}: {msg}"));
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(fail("not a .npy file (it does not start with \\x93NUMPY and a version)".into()));
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (header_start, header_len) = match (major, minor) {
        (1, 0) => (10, u16::from_le_bytes([bytes[8], bytes[9]]) as usize),
        (2 | 3, 0) if bytes.len() >= 12 => (12, u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize),
        (2 | 3, 0) => return Err(fail("the file ends inside the header length".into())),
        _ => return Err(fail(format!("format version {major}.{minor} is not supported (1.0, 2.0 and 3.0 are)"))),
    };
    let data_start = header_start + header_len;
    let Some(raw_header) = bytes.get(header_start..data_start) else {
        return Err(fail(format!("the header claims {header_len} bytes, the file has {}", bytes.len() - header_start)));
    };
    // Versions 1 and 2 store Latin-1, version 3 UTF-8.
    let text: Cow<'_, str> = if major == 3 {
        Cow::Borrowed(std::str::from_utf8(raw_header).map_err(|e| fail(format!("the header is not UTF-8: {e}")))?)
    } else {
        Cow::Owned(raw_header.iter().map(|&b| b as char).collect())
    };
    let header = npy_header::parse(op, &text).map_err(|e| match e {
        Error::Format { msg, .. } => fail(msg),
        other => other,
    })?;
    let (stored, big_endian) = stored_of(&header.descr).map_err(fail)?;
    let data = &bytes[data_start..];
    let needed = data_len(op, what, stored, &header.shape, data.len())?;
    if data.len() != needed {
        return Err(fail(format!(
            "{} bytes follow the data of shape {:?} ({needed} bytes)",
            data.len() - needed,
            header.shape
        )));
    }
    let data: Cow<'_, [u8]> = if big_endian && stored.size() > 1 {
        Cow::Owned(data.chunks_exact(stored.size()).flat_map(|c| c.iter().rev().copied()).collect())
    } else {
        Cow::Borrowed(data)
    };
    let host = to_host(stored, &data);
    let dtype = stored.dtype();
    if header.fortran_order && header.shape.len() > 1 {
        cpu_array(&fortran_to_c(&host, &header.shape, dtype.size()), &header.shape, dtype)
    } else {
        cpu_array(&host, &header.shape, dtype)
    }
}

/// The stored type a descr names, and whether it is big-endian; `Err` says why a
/// descr is refused.
fn stored_of(descr: &str) -> std::result::Result<(Stored, bool), String> {
    let (order, code) = match descr.as_bytes().first() {
        Some(c @ (b'<' | b'>' | b'|' | b'=')) => (*c, &descr[1..]),
        _ => (b'=', descr),
    };
    let big = order == b'>' || (order == b'=' && cfg!(target_endian = "big"));
    let stored = match code {
        "b1" | "?" => Stored::Same(DType::Bool),
        "u1" | "B" => Stored::U8,
        "u2" | "H" => Stored::U16,
        "u4" | "I" => Stored::Same(DType::U32),
        "i1" | "b" => Stored::I8,
        "i2" | "h" => Stored::I16,
        "i4" | "i" => Stored::Same(DType::I32),
        "i8" | "q" => Stored::Same(DType::I64),
        "f2" | "e" => Stored::Same(DType::F16),
        "f4" | "f" => Stored::Same(DType::F32),
        "f8" | "d" => Stored::Same(DType::F64),
        _ => return Err(format!("dtype '{descr}' ({}) is not supported: {}", describe(code), hint(code))),
    };
    Ok((stored, big))
}

/// NumPy's name for a type code lazuli refuses.
fn describe(code: &str) -> &'static str {
    match code.as_bytes().first() {
        Some(b'u') if code == "u8" => "uint64",
        Some(b'c') => "complex",
        Some(b'f' | b'g') => "extended-precision float",
        Some(b'O') => "Python objects",
        Some(b'S' | b'a') => "byte strings",
        Some(b'U') => "unicode strings",
        Some(b'V') => "raw or structured void data",
        Some(b'M') => "datetime64",
        Some(b'm') => "timedelta64",
        _ => "an unknown type code",
    }
}

/// What to do instead, for a refused type code.
fn hint(code: &str) -> &'static str {
    match code.as_bytes().first() {
        Some(b'u') if code == "u8" => {
            "lazuli's widest unsigned type is uint32; convert in NumPy with .astype(np.int64) if the values fit"
        }
        Some(b'V') => {
            "lazuli loads bool, (u)int8-32, int64 and float16-64; bfloat16 from ml_dtypes saves as void: \
             use safetensors for bfloat16"
        }
        _ => "lazuli loads bool, (u)int8-32, int64 and float16-64; convert in NumPy with .astype first",
    }
}

/// Row-major bytes of an array of `shape` whose `data` is in column-major order.
fn fortran_to_c(data: &[u8], shape: &[usize], elem: usize) -> Vec<u8> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(data.len());
    if n == 0 {
        return out;
    }
    // Column-major strides in elements: the first axis is contiguous.
    let mut strides = Vec::with_capacity(shape.len());
    let mut acc = 1;
    for &d in shape {
        strides.push(acc);
        acc *= d;
    }
    let mut idx = vec![0usize; shape.len()];
    let mut off = 0usize;
    for _ in 0..n {
        out.extend_from_slice(&data[off * elem..(off + 1) * elem]);
        // Advance the row-major multi-index (last axis fastest), tracking the offset.
        for k in (0..shape.len()).rev() {
            idx[k] += 1;
            off += strides[k];
            if idx[k] < shape[k] {
                break;
            }
            off -= strides[k] * shape[k];
            idx[k] = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::fortran_to_c;

    #[test]
    fn fortran_order_becomes_row_major() {
        // np.asfortranarray(np.arange(6).reshape(2, 3)) stores 0 3 1 4 2 5.
        let f: Vec<u8> = [0u8, 3, 1, 4, 2, 5].to_vec();
        assert_eq!(fortran_to_c(&f, &[2, 3], 1), [0, 1, 2, 3, 4, 5]);
        // Shape (2, 2, 2): column-major order visits axis 0 fastest.
        let f: Vec<u8> = [0u8, 4, 2, 6, 1, 5, 3, 7].to_vec();
        assert_eq!(fortran_to_c(&f, &[2, 2, 2], 1), [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(fortran_to_c(&[], &[0, 3], 4), Vec::<u8>::new());
    }
}
