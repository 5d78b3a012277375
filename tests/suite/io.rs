//! `lazuli::io`: round trips of every dtype and shape on every device, files written by
//! NumPy and by hand from the specs (tests/fixtures/io, made by
//! scripts/gen_io_fixtures.py), and corrupt or truncated files.

use std::collections::BTreeMap;
use std::path::PathBuf;

use half::{bf16, f16};
use lazuli::dtype::f64s_to_bytes;
use lazuli::io::{self, GgufValue};
use lazuli::{Array, DType, Device, Error, Params, Result};

use crate::common::{devices, on, ravel, unravel};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/io").join(name)
}

fn fixture_bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap()
}

/// A fresh directory for one test's files.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lazuli-io-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Values every dtype holds exactly: small integers, negative ones for signed dtypes,
/// halves for floats, every third element true for bool.
fn test_values(dtype: DType, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let v = (i * 3 + 1) as f64;
            let v = if dtype.is_signed() && i % 2 == 1 { -v } else { v };
            let v = if dtype.is_float() { v + 0.5 } else { v };
            if dtype == DType::Bool { f64::from(u8::from(i % 3 == 0)) } else { v }
        })
        .collect()
}

/// `values` (row-major in `shape`) transposed with all axes reversed, row-major.
fn reversed_axes(values: &[f64], shape: &[usize]) -> Vec<f64> {
    let rshape: Vec<usize> = shape.iter().rev().copied().collect();
    (0..values.len())
        .map(|i| {
            let idx: Vec<usize> = unravel(i, &rshape).into_iter().rev().collect();
            values[ravel(&idx, shape)]
        })
        .collect()
}

/// Element values of any array, as f64 (exact for everything the tests use).
fn as_f64(a: &Array) -> Vec<f64> {
    match a.dtype() {
        DType::Bool => a.to_vec::<bool>().unwrap().into_iter().map(|b| f64::from(u8::from(b))).collect(),
        DType::U32 => a.to_vec::<u32>().unwrap().into_iter().map(f64::from).collect(),
        DType::I32 => a.to_vec::<i32>().unwrap().into_iter().map(f64::from).collect(),
        DType::I64 => a.to_vec::<i64>().unwrap().into_iter().map(|x| x as f64).collect(),
        DType::F16 => a.to_vec::<f16>().unwrap().into_iter().map(f16::to_f64).collect(),
        DType::BF16 => a.to_vec::<bf16>().unwrap().into_iter().map(bf16::to_f64).collect(),
        DType::F32 => a.to_vec::<f32>().unwrap().into_iter().map(f64::from).collect(),
        DType::F64 => a.to_vec::<f64>().unwrap(),
    }
}

fn assert_array(what: &str, a: &Array, dtype: DType, shape: &[usize], values: &[f64]) {
    assert_eq!(a.dtype(), dtype, "{what}: dtype");
    assert_eq!(a.shape(), shape, "{what}: shape");
    assert_eq!(a.device(), Device::cpu(), "{what}: loaded arrays live on the CPU");
    assert_eq!(as_f64(a), values, "{what}: values");
}

/// The message of a `Format` error (panics on any other result).
fn format_msg<T: std::fmt::Debug>(r: Result<T>) -> String {
    match r {
        Err(e @ Error::Format { .. }) => e.to_string(),
        other => panic!("expected Error::Format, got {other:?}"),
    }
}

const SHAPES: &[&[usize]] = &[&[], &[0], &[2, 0, 3], &[5], &[2, 3], &[2, 3, 4]];

/// Every format's in-memory round trip, as (name, bytes -> array).
fn round_trips(x: &Array) -> Vec<(&'static str, Result<Array>)> {
    let one = |r: Result<Vec<(String, Array)>>| {
        r.map(|v| {
            assert_eq!(v.len(), 1);
            assert_eq!(v[0].0, "x");
            v.into_iter().next().unwrap().1
        })
    };
    vec![
        ("npy", io::npy_to_bytes(x).and_then(|b| io::npy_from_bytes(&b))),
        ("npz", one(io::npz_to_bytes([("x", x)], false).and_then(|b| io::npz_from_bytes(&b)))),
        ("npz compressed", one(io::npz_to_bytes([("x", x)], true).and_then(|b| io::npz_from_bytes(&b)))),
        (
            "safetensors",
            one(io::safetensors_to_bytes([("x", x)], None).and_then(|b| io::safetensors_from_bytes(&b).map(|(t, _)| t))),
        ),
    ]
}

#[test]
fn every_dtype_and_shape_round_trips_on_every_device() {
    for d in devices() {
        for dtype in DType::ALL {
            for &shape in SHAPES {
                for transposed in [false, true] {
                    let n = shape.iter().product();
                    let values = test_values(dtype, n);
                    let host = Array::from_bytes(&f64s_to_bytes(dtype, values.iter().copied()), shape, dtype).unwrap();
                    // The array to save lives on `d`; a transpose is a non-contiguous view.
                    let x = on(d, || {
                        let x = host.to_device(d)?;
                        let x = if transposed {
                            x.transpose(&(0..shape.len() as isize).rev().collect::<Vec<_>>())?
                        } else {
                            x
                        };
                        x.eval()?;
                        Ok(x)
                    });
                    let x = match x {
                        Ok(x) => x,
                        // The GPU lacks i64, f64 and bf16 (and f16 without SHADER_F16).
                        Err(e) if d != Device::cpu() && matches!(e.root_cause(), Error::Unsupported { .. }) => {
                            assert!(matches!(dtype, DType::I64 | DType::F64 | DType::BF16 | DType::F16), "{e}");
                            continue;
                        }
                        Err(e) => panic!("{d} {dtype} {shape:?}: {e}"),
                    };
                    let (want_shape, want) = if transposed {
                        (shape.iter().rev().copied().collect::<Vec<_>>(), reversed_axes(&values, shape))
                    } else {
                        (shape.to_vec(), values.clone())
                    };
                    for (format, got) in round_trips(&x) {
                        let what = format!("{format} on {d}, {dtype} {shape:?} transposed={transposed}");
                        if dtype == DType::BF16 && format.starts_with("np") {
                            let e = got.expect_err(&what);
                            assert!(matches!(e, Error::DType { dtype: DType::BF16, .. }), "{what}: {e}");
                            assert!(e.to_string().contains("safetensors"), "{what}: {e}");
                            continue;
                        }
                        assert_array(&what, &got.unwrap_or_else(|e| panic!("{what}: {e}")), dtype, &want_shape, &want);
                    }
                }
            }
        }
    }
}

#[test]
fn files_round_trip_with_names_in_order_and_metadata() {
    let dir = temp_dir("files");
    for d in devices() {
        let (w, b) = on(d, || {
            let w = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?.to_device(d)?.mul(2.0)?;
            let b = Array::from_slice(&[-1i32, 7], &[2])?.to_device(d)?;
            Ok((w, b))
        })
        .unwrap();
        // Loading inside a GPU scope still gives CPU arrays.
        let loaded = on(d, || {
            io::save_npy(dir.join("w.npy"), &w)?;
            io::load_npy(dir.join("w.npy"))
        })
        .unwrap();
        assert_array("npy file", &loaded, DType::F32, &[2, 3], &[2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);

        // Not alphabetical: the archive keeps the order given.
        let pairs = [("zeta", &w), ("alpha", &b)];
        for (compressed, file) in [(false, "p.npz"), (true, "pc.npz")] {
            let path = dir.join(file);
            if compressed { io::save_npz_compressed(&path, pairs) } else { io::save_npz(&path, pairs) }.unwrap();
            let got = io::load_npz(&path).unwrap();
            assert_eq!(got.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["zeta", "alpha"]);
            assert_array("npz zeta", &got[0].1, DType::F32, &[2, 3], &[2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
            assert_array("npz alpha", &got[1].1, DType::I32, &[2], &[-1.0, 7.0]);
            // A loaded collection saves again as it is, and collects into Params.
            io::save_npz(dir.join("again.npz"), got.clone()).unwrap();
            let p: Params = io::load_npz(dir.join("again.npz")).unwrap().into_iter().collect();
            assert_eq!(p.names(), ["alpha", "zeta"]);
        }

        let mut p = Params::new();
        p.insert("layer.w", w.clone());
        p.insert("layer.b", b.clone());
        // bf16 exists on the CPU only; the cast follows `w` to its device unless scoped.
        let cpu = lazuli::default_stream(lazuli::Device::cpu()).unwrap();
        p.insert("h", lazuli::with_stream(&cpu, || w.astype(DType::BF16)).unwrap());
        let meta = BTreeMap::from([("format".to_string(), "pt".to_string())]);
        let path = dir.join("m.safetensors");
        io::save_safetensors_with_metadata(&path, &p, &meta).unwrap();
        let (got, got_meta) = io::load_safetensors_with_metadata(&path).unwrap();
        assert_eq!(got_meta, meta);
        let got: Params = got.into_iter().collect();
        assert_eq!(got.names(), ["h", "layer.b", "layer.w"]);
        assert_array("safetensors bf16", &got["h"], DType::BF16, &[2, 3], &[2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
        assert_array("safetensors i32", &got["layer.b"], DType::I32, &[2], &[-1.0, 7.0]);
        io::save_safetensors(&path, &p).unwrap();
        assert!(io::load_safetensors_with_metadata(&path).unwrap().1.is_empty());
        assert_eq!(io::load_safetensors(&path).unwrap().len(), 3);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn numpy_npy_files_load_exactly() {
    let load = |name: &str| io::load_npy(fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_array("c_f32", &load("c_f32.npy"), DType::F32, &[2, 3], &[-1.0, -0.5, 0.0, 0.5, 1.0, 1.5]);
    let iota = |n: usize| (0..n).map(|i| i as f64).collect::<Vec<_>>();
    assert_array("fortran_i32", &load("fortran_i32.npy"), DType::I32, &[3, 4], &iota(12));
    assert_array("fortran_f64_3d", &load("fortran_f64_3d.npy"), DType::F64, &[2, 3, 4], &iota(24));
    assert_array("bool", &load("bool.npy"), DType::Bool, &[2, 3], &[1.0, 0.0, 1.0, 0.0, 0.0, 1.0]);
    assert_array("f16", &load("f16.npy"), DType::F16, &[4], &[1.5, -2.25, 65504.0, 2f64.powi(-24)]);
    assert_array("be_f4", &load("be_f4.npy"), DType::F32, &[3], &[1.0, -2.5, 3.25]);
    assert_array("be_i8", &load("be_i8.npy"), DType::I64, &[3], &[1.0, -2.0, 2f64.powi(40)]);
    assert_array("be_u4_fortran", &load("be_u4_fortran.npy"), DType::U32, &[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    assert_array("scalar_f64", &load("scalar_f64.npy"), DType::F64, &[], &[3.5]);
    assert_array("empty_f32", &load("empty_f32.npy"), DType::F32, &[0, 3], &[]);
    // Narrow integers widen losslessly, keeping their signedness.
    assert_array("u8", &load("u8.npy"), DType::U32, &[3], &[0.0, 255.0, 7.0]);
    assert_array("i16", &load("i16.npy"), DType::I32, &[3], &[-32768.0, 32767.0, -1.0]);
    assert_array("v2_i64", &load("v2_i64.npy"), DType::I64, &[2, 2], &[1.0, -2.0, 3.0, -4.0]);
    assert_array("v3_u4", &load("v3_u4.npy"), DType::U32, &[3], &[7.0, 8.0, 4294967295.0]);

    let complex = format_msg(io::load_npy(fixture("complex.npy")));
    assert!(complex.contains("'<c8' (complex)") && complex.contains("complex.npy"), "{complex}");
    let u64 = format_msg(io::load_npy(fixture("u64.npy")));
    assert!(u64.contains("uint64") && u64.contains("astype(np.int64)"), "{u64}");

    // What lazuli writes is byte for byte what NumPy wrote.
    for name in ["c_f32.npy", "bool.npy", "f16.npy", "scalar_f64.npy", "empty_f32.npy", "v2_i64.npy"] {
        let mut want = fixture_bytes(name);
        if name == "v2_i64.npy" {
            // NumPy was told to write version 2.0; lazuli writes 1.0 when the header fits.
            let v1 = io::npy_to_bytes(&load(name)).unwrap();
            assert_eq!(&v1[..8], b"\x93NUMPY\x01\x00");
            want = v1;
        }
        assert_eq!(io::npy_to_bytes(&load(name)).unwrap(), want, "{name}");
    }
}

#[test]
fn numpy_npz_files_load_in_archive_order() {
    let got = io::load_npz(fixture("stored.npz")).unwrap();
    assert_eq!(got.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["weight", "bias", "alpha"]);
    assert_array("weight", &got[0].1, DType::F32, &[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    assert_array("bias", &got[1].1, DType::F32, &[2], &[-0.5, 0.25]);
    assert_array("alpha", &got[2].1, DType::I32, &[], &[7.0]);
    let got = io::npz_from_bytes(&fixture_bytes("compressed.npz")).unwrap();
    assert_eq!(got.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["zeros", "mask"]);
    assert_array("zeros", &got[0].1, DType::F32, &[256], &[0.0; 256]);
    assert_array("mask", &got[1].1, DType::Bool, &[2], &[1.0, 0.0]);
}

#[test]
fn safetensors_fixture_loads_with_metadata() {
    let (t, meta) = io::load_safetensors_with_metadata(fixture("tiny.safetensors")).unwrap();
    assert_eq!(t.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["w", "count", "b", "pix", "mask"]);
    assert_array("w", &t[0].1, DType::F32, &[2, 2], &[1.0, -2.0, 3.5, 0.25]);
    assert_array("count", &t[1].1, DType::I64, &[], &[-(2f64.powi(40))]);
    assert_array("b", &t[2].1, DType::BF16, &[3], &[1.0, -2.0, 0.5]);
    assert_array("pix", &t[3].1, DType::U32, &[3], &[0.0, 200.0, 255.0]);
    assert_array("mask", &t[4].1, DType::Bool, &[2], &[1.0, 0.0]);
    assert_eq!(meta.get("format").map(String::as_str), Some("pt"));
    assert_eq!(meta.get("note").map(String::as_str), Some("lazuli fixture"));
}

#[test]
fn gguf_fixtures_load_tensors_and_metadata() {
    let g = io::load_gguf(fixture("tiny_v3.gguf")).unwrap();
    assert_eq!(g.version, 3);
    assert_eq!(g.get("general.architecture"), Some(&GgufValue::String("llama".into())));
    assert_eq!(g.get("general.alignment"), Some(&GgufValue::U32(64)));
    let scalars = [
        ("test.u8", GgufValue::U8(200)),
        ("test.i8", GgufValue::I8(-5)),
        ("test.u16", GgufValue::U16(65535)),
        ("test.i16", GgufValue::I16(-300)),
        ("test.i32", GgufValue::I32(-70000)),
        ("test.f32", GgufValue::F32(0.5)),
        ("test.bool", GgufValue::Bool(true)),
        ("test.u64", GgufValue::U64(1 << 40)),
        ("test.i64", GgufValue::I64(-(1 << 40))),
        ("test.f64", GgufValue::F64(-1.25)),
    ];
    for (k, v) in scalars {
        assert_eq!(g.get(k), Some(&v), "{k}");
    }
    let s = |x: &str| GgufValue::String(x.into());
    assert_eq!(g.get("tokenizer.tokens"), Some(&GgufValue::Array(vec![s("a"), s("bc"), s("")])));
    assert_eq!(
        g.get("test.nested"),
        Some(&GgufValue::Array(vec![
            GgufValue::Array(vec![GgufValue::I32(1), GgufValue::I32(2)]),
            GgufValue::Array(vec![])
        ]))
    );
    assert_eq!(g.metadata.len(), 14);
    assert_eq!(g.tensors.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["w", "h", "b", "i", "c"]);
    assert_array("w", g.tensor("w").unwrap(), DType::F32, &[2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_array("h", g.tensor("h").unwrap(), DType::F16, &[4], &[1.0, -0.5, 2048.0, 0.0]);
    assert_array("b", g.tensor("b").unwrap(), DType::BF16, &[2], &[1.0, -3.0]);
    assert_array("i", g.tensor("i").unwrap(), DType::I32, &[2, 2], &[1.0, -2.0, 3.0, -4.0]);
    assert_array("c", g.tensor("c").unwrap(), DType::I32, &[3], &[-128.0, 0.0, 127.0]);

    let g = io::gguf_from_bytes(&fixture_bytes("tiny_v2.gguf")).unwrap();
    assert_eq!(g.version, 2);
    assert_eq!(g.get("general.name"), Some(&GgufValue::String("v2".into())));
    assert_array("x", &g.tensors[0].1, DType::F64, &[2], &[0.5, -8.0]);

    let q = format_msg(io::load_gguf(fixture("q8_0.gguf")));
    assert!(q.contains("Q8_0") && q.contains("quantised") && q.contains("\"q\""), "{q}");
}

/// Runs `load` on `bytes` and reports a panic as a failure naming `what`.
fn no_panic<T>(what: &str, load: impl Fn(&[u8]) -> Result<T>, bytes: &[u8]) -> bool {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| load(bytes).is_ok())) {
        Ok(ok) => ok,
        Err(_) => panic!("{what}: the loader panicked"),
    }
}

#[test]
fn truncated_and_corrupted_files_are_errors_not_panics() {
    type Loader = fn(&[u8]) -> bool;
    let npy: Loader = |b| no_panic("npy", io::npy_from_bytes, b);
    let npz: Loader = |b| no_panic("npz", io::npz_from_bytes, b);
    let st: Loader = |b| no_panic("safetensors", io::safetensors_from_bytes, b);
    let gguf: Loader = |b| no_panic("gguf", io::gguf_from_bytes, b);
    let cases: [(&str, Loader, bool); 9] = [
        ("c_f32.npy", npy, true),
        ("fortran_f64_3d.npy", npy, true),
        ("v3_u4.npy", npy, true),
        ("stored.npz", npz, true),
        ("compressed.npz", npz, true),
        ("tiny.safetensors", st, true),
        // GGUF pads the data to the alignment: cutting only padding leaves a valid file.
        ("tiny_v3.gguf", gguf, false),
        ("tiny_v2.gguf", gguf, false),
        ("q8_0.gguf", gguf, true),
    ];
    for (name, load, strict) in cases {
        let bytes = fixture_bytes(name);
        assert!(load(&bytes) || name == "q8_0.gguf", "{name} loads whole");
        for cut in 0..bytes.len() {
            let ok = load(&bytes[..cut]);
            assert!(!(strict && ok), "{name} cut to {cut} bytes loaded");
        }
        // Flip bytes in the first 512 (every header here): Err or Ok, never a panic.
        for at in 0..bytes.len().min(512) {
            for flip in [0xFFu8, 0x01, 0x80] {
                let mut b = bytes.clone();
                b[at] ^= flip;
                load(&b);
            }
        }
    }
}

#[test]
fn huge_declared_shapes_are_refused_before_allocating() {
    let npy = |shape: &str| {
        let text = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        b.extend_from_slice(&(text.len() as u16).to_le_bytes());
        b.extend_from_slice(text.as_bytes());
        b.extend_from_slice(&[0; 16]);
        b
    };
    for shape in ["(1099511627776, 1099511627776)", "(4611686018427387904,)", "(1000000000,)", "(5,)"] {
        let msg = format_msg(io::npy_from_bytes(&npy(shape)));
        assert!(msg.contains("too large") || msg.contains("the file has 16"), "{shape}: {msg}");
    }
    assert_eq!(io::npy_from_bytes(&npy("(4,)")).unwrap().to_vec::<f32>().unwrap(), [0.0; 4]);

    // A GGUF tensor of 2^20 x 2^20 F32 (4 TiB) elements in a file of a few bytes.
    let mut g = b"GGUF".to_vec();
    g.extend_from_slice(&3u32.to_le_bytes());
    g.extend_from_slice(&1u64.to_le_bytes());
    g.extend_from_slice(&0u64.to_le_bytes());
    g.extend_from_slice(&1u64.to_le_bytes());
    g.push(b't');
    g.extend_from_slice(&2u32.to_le_bytes());
    g.extend_from_slice(&(1u64 << 20).to_le_bytes());
    g.extend_from_slice(&(1u64 << 20).to_le_bytes());
    g.extend_from_slice(&0u32.to_le_bytes());
    g.extend_from_slice(&0u64.to_le_bytes());
    g.resize(96, 0);
    let msg = format_msg(io::gguf_from_bytes(&g));
    assert!(msg.contains("\"t\"") && msg.contains("needs"), "{msg}");
    // Counts claiming 2^60 key-value pairs or tensors end at the file's end.
    let mut g = b"GGUF".to_vec();
    g.extend_from_slice(&3u32.to_le_bytes());
    g.extend_from_slice(&(1u64 << 60).to_le_bytes());
    g.extend_from_slice(&(1u64 << 60).to_le_bytes());
    assert!(format_msg(io::gguf_from_bytes(&g)).contains("ends"));
}

#[test]
fn errors_name_the_problem() {
    // A missing file: Error::Io with the path and the OS error as its source.
    let missing = fixture("no-such-file.npy");
    match io::load_npy(&missing) {
        Err(Error::Io { op, path, cause }) => {
            assert_eq!((op, path), ("load_npy", missing));
            assert_eq!(cause.downcast_ref::<std::io::Error>().unwrap().kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("{other:?}"),
    }
    // A corrupt file names itself.
    let dir = temp_dir("errors");
    let bad = dir.join("bad.npy");
    std::fs::write(&bad, b"not numpy").unwrap();
    match io::load_npy(&bad) {
        Err(Error::Format { op: "load_npy", path: Some(p), msg, cause: None }) => {
            assert_eq!(p, bad);
            assert!(msg.contains("not a .npy file"), "{msg}");
        }
        other => panic!("{other:?}"),
    }
    // An unreadable archive keeps the zip crate's error as the source.
    std::fs::write(dir.join("bad.npz"), b"PK\x03\x04 truncated").unwrap();
    let e = io::load_npz(dir.join("bad.npz")).unwrap_err();
    assert!(matches!(&e, Error::Format { cause: Some(_), .. }), "{e:?}");
    assert!(std::error::Error::source(&e).is_some());
    assert!(format_msg(io::load_npy(dir.join("bad.npz"))).contains("bad.npz"));
    std::fs::remove_dir_all(&dir).unwrap();
    // An archive entry that is not a .npy file.
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    zip.start_file("readme.txt", zip::write::SimpleFileOptions::default()).unwrap();
    std::io::Write::write_all(&mut zip, b"hello").unwrap();
    let b = zip.finish().unwrap().into_inner();
    assert!(format_msg(io::npz_from_bytes(&b)).contains("\"readme.txt\" is not a .npy file"));

    let a = Array::from_slice(&[1.0f32], &[1]).unwrap();
    let e = io::npz_to_bytes([("a", &a), ("a", &a)], false).unwrap_err();
    assert!(matches!(e, Error::Invalid { .. }) && e.to_string().contains("\"a\""), "{e}");
    let e = io::safetensors_to_bytes([("", &a)], None).unwrap_err();
    assert!(matches!(e, Error::Invalid { .. }), "{e}");
    let e = io::save_npy(std::env::temp_dir().join("lazuli-no-such-dir/x.npy"), &a).unwrap_err();
    assert!(matches!(e, Error::Io { op: "save_npy", .. }), "{e}");
    // Loading a file of another format says so.
    assert!(format_msg(io::load_gguf(fixture("c_f32.npy"))).contains("not a GGUF file"));
    assert!(format_msg(io::load_safetensors(fixture("c_f32.npy"))).contains("not a valid .safetensors file"));
    // GGUF versions and byte orders this reader does not take.
    let mut g = b"GGUF".to_vec();
    g.extend_from_slice(&3u32.to_be_bytes());
    g.extend_from_slice(&[0; 16]);
    assert!(format_msg(io::gguf_from_bytes(&g)).contains("big-endian"));
    g[4..8].copy_from_slice(&1u32.to_le_bytes());
    assert!(format_msg(io::gguf_from_bytes(&g)).contains("version 1 is not supported"));
    // Trailing bytes after the data are a mismatch.
    let mut b = fixture_bytes("c_f32.npy");
    b.push(0);
    assert!(format_msg(io::npy_from_bytes(&b)).contains("1 bytes follow the data"));
}
