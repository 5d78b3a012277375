//! NumPy's `.npz` format: a zip archive of `.npy` files, one per named array. NumPy's
//! `savez` stores the entries, `savez_compressed` deflates them; both load here.
//!
//! An entry `name.npy` is the array `name` (as `np.load` names it); entries that do not
//! end in `.npy` are an error. Entries load in archive order.

use std::borrow::Borrow;
use std::io::{Cursor, Read, Seek, Write};
use std::path::Path;

use zip::CompressionMethod;
use zip::write::SimpleFileOptions;

use super::{Named, at_path, check_unique, collect_named, format_cause, map_file, npy};
use crate::array::Array;
use crate::error::{Error, Result};

/// Deflate expands at most about 1032 to 1: an entry claiming more than this multiple
/// of its compressed size is corrupt, and is refused before its data is read.
const MAX_RATIO: u64 = 1100;

/// Writes `arrays` to `path` as an uncompressed `.npz` (as `np.savez` does).
///
/// `arrays` is any collection of `(name, array)` pairs: `&Params`, a loaded `Vec`, or
/// `[("w", &w)]`; each becomes the entry `name.npy`, in the order given. Arrays are
/// evaluated together; the dtype rules are [`super::save_npy`]'s.
pub fn save_npz<S: AsRef<str>, A: Borrow<Array>>(
    path: impl AsRef<Path>,
    arrays: impl IntoIterator<Item = (S, A)>,
) -> Result<()> {
    save_file("save_npz", path.as_ref(), arrays, CompressionMethod::Stored)
}

/// [`save_npz`] with every entry deflated (as `np.savez_compressed` does).
pub fn save_npz_compressed<S: AsRef<str>, A: Borrow<Array>>(
    path: impl AsRef<Path>,
    arrays: impl IntoIterator<Item = (S, A)>,
) -> Result<()> {
    save_file("save_npz_compressed", path.as_ref(), arrays, CompressionMethod::Deflated)
}

/// The bytes of an `.npz` file holding `arrays` (see [`save_npz`]), deflated if
/// `compressed`.
pub fn npz_to_bytes<S: AsRef<str>, A: Borrow<Array>>(
    arrays: impl IntoIterator<Item = (S, A)>,
    compressed: bool,
) -> Result<Vec<u8>> {
    let method = if compressed { CompressionMethod::Deflated } else { CompressionMethod::Stored };
    let out = write_zip("npz_to_bytes", Cursor::new(Vec::new()), arrays, method).map_err(|e| match e {
        ZipOut::Lazuli(e) => e,
        ZipOut::Zip(e) => format_cause("npz_to_bytes", "writing the archive failed", e),
    })?;
    Ok(out.into_inner())
}

/// Reads the `.npz` file at `path`: its arrays, named without the `.npy` suffix, in
/// archive order. Collect into [`Params`](crate::Params) to look them up by name.
pub fn load_npz(path: impl AsRef<Path>) -> Result<Named> {
    const OP: &str = "load_npz";
    let path = path.as_ref();
    let bytes = map_file(OP, path)?;
    decode(OP, &bytes).map_err(|e| at_path(e, OP, path))
}

/// Reads an `.npz` file's bytes (see [`load_npz`]).
pub fn npz_from_bytes(bytes: &[u8]) -> Result<Named> {
    decode("npz_from_bytes", bytes)
}

fn save_file<S: AsRef<str>, A: Borrow<Array>>(
    op: &'static str,
    path: &Path,
    arrays: impl IntoIterator<Item = (S, A)>,
    method: CompressionMethod,
) -> Result<()> {
    // Check and evaluate before creating the file, so a bad call leaves no file behind.
    let named = collect_named(op, arrays)?;
    let file = std::fs::File::create(path).map_err(|e| Error::io(op, path, e))?;
    let out = write_zip(op, std::io::BufWriter::new(file), named, method).map_err(|e| match e {
        ZipOut::Lazuli(e) => e,
        ZipOut::Zip(zip::result::ZipError::Io(e)) => Error::io(op, path, e),
        ZipOut::Zip(e) => format_cause(op, "writing the archive failed", e),
    })?;
    out.into_inner().map_err(|e| Error::io(op, path, e.into_error()))?;
    Ok(())
}

/// A failure while writing: ours, or the zip writer's (whose I/O errors the caller
/// attributes to its file).
enum ZipOut {
    Lazuli(Error),
    Zip(zip::result::ZipError),
}

fn write_zip<W: Write + Seek, S: AsRef<str>, A: Borrow<Array>>(
    op: &'static str,
    sink: W,
    arrays: impl IntoIterator<Item = (S, A)>,
    method: CompressionMethod,
) -> std::result::Result<W, ZipOut> {
    let named = collect_named(op, arrays).map_err(ZipOut::Lazuli)?;
    let mut zip = zip::ZipWriter::new(sink);
    for (name, array) in &named {
        let bytes = npy::encode(op, array.borrow()).map_err(ZipOut::Lazuli)?;
        // Zip64 only where needed: the 32-bit fields overflow at 4 GiB.
        let options =
            SimpleFileOptions::default().compression_method(method).large_file(bytes.len() >= u32::MAX as usize);
        zip.start_file(format!("{name}.npy"), options).map_err(ZipOut::Zip)?;
        zip.write_all(&bytes).map_err(|e| ZipOut::Zip(e.into()))?;
    }
    zip.finish().map_err(ZipOut::Zip)
}

fn decode(op: &'static str, bytes: &[u8]) -> Result<Named> {
    let mut archive =
        zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| format_cause(op, "not a readable zip archive", e))?;
    let mut out = Vec::with_capacity(archive.len());
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(|e| format_cause(op, format!("entry {i} is unreadable"), e))?;
        let name = entry.name().map_err(|e| format_cause(op, format!("entry {i} has a bad name"), e))?.into_owned();
        let Some(stem) = name.strip_suffix(".npy") else {
            return Err(Error::format(
                op,
                format!("entry {name:?} is not a .npy file (its name does not end in .npy)"),
            ));
        };
        // The compressed data lies inside the archive, whatever the entry claims.
        let limit = entry.compressed_size().min(bytes.len() as u64).saturating_mul(MAX_RATIO).saturating_add(4096);
        if entry.size() > limit {
            return Err(Error::format(
                op,
                format!(
                    "entry {name:?} claims {} bytes from {} compressed ones",
                    entry.size(),
                    entry.compressed_size()
                ),
            ));
        }
        let size = entry.size();
        // The size is bounded but may still be a lie: reserve at most 64 MiB up front and
        // let the data that really arrives grow the buffer.
        let mut data = Vec::with_capacity(size.min(64 << 20) as usize);
        // One byte past the claimed size: reading to the end makes the zip reader check
        // the CRC, and an entry longer than it claims shows.
        (&mut entry)
            .take(size + 1)
            .read_to_end(&mut data)
            .map_err(|e| format_cause(op, format!("entry {name:?} could not be decompressed"), e))?;
        if (data.len() as u64) != size {
            return Err(Error::format(
                op,
                format!("entry {name:?} does not hold the {size} bytes its header gives (it holds {})", data.len()),
            ));
        }
        let array = npy::decode(op, &format!("entry {name:?}"), &data)?;
        out.push((stem.to_string(), array));
    }
    check_unique(op, "array name", out.iter().map(|(n, _)| n.as_str()))?;
    Ok(out)
}
