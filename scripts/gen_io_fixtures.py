#!/usr/bin/env python3
"""Writes the small files under tests/fixtures/io/ that tests/suite/io.rs loads.

NumPy writes the .npy and .npz files itself. The .safetensors and GGUF files are built
byte by byte from their specifications (the safetensors and gguf Python packages are
not assumed): safetensors is an 8-byte little-endian header length, a JSON header and
the data; GGUF follows ggml's docs/gguf.md. The values are the literals the tests
assert, so change both together. Run from the repository root:

    python3 scripts/gen_io_fixtures.py
"""
import io
import json
import os
import struct

import numpy as np

OUT = os.path.join("tests", "fixtures", "io")


def save(name, arr, version=None):
    with open(os.path.join(OUT, name), "wb") as f:
        if version is None:
            np.save(f, arr)
        else:
            np.lib.format.write_array(f, np.asanyarray(arr), version=version)


def npy_fixtures():
    save("c_f32.npy", np.arange(6, dtype="<f4").reshape(2, 3) * 0.5 - 1)
    save("fortran_i32.npy", np.asfortranarray(np.arange(12, dtype=np.int32).reshape(3, 4)))
    save("fortran_f64_3d.npy", np.asfortranarray(np.arange(24, dtype=np.float64).reshape(2, 3, 4)))
    save("bool.npy", np.array([[True, False, True], [False, False, True]]))
    save("f16.npy", np.array([1.5, -2.25, 65504, 2.0**-24], dtype=np.float16))
    save("be_f4.npy", np.array([1.0, -2.5, 3.25], dtype=">f4"))
    save("be_i8.npy", np.array([1, -2, 2**40], dtype=">i8"))
    save("be_u4_fortran.npy", np.asfortranarray(np.array([[1, 2], [3, 4]], dtype=">u4")))
    save("scalar_f64.npy", np.array(3.5))
    save("empty_f32.npy", np.zeros((0, 3), dtype=np.float32))
    save("u8.npy", np.array([0, 255, 7], dtype=np.uint8))
    save("i16.npy", np.array([-32768, 32767, -1], dtype=np.int16))
    save("v2_i64.npy", np.array([[1, -2], [3, -4]], dtype=np.int64), version=(2, 0))
    save("v3_u4.npy", np.array([7, 8, 4294967295], dtype=np.uint32), version=(3, 0))
    save("complex.npy", np.array([1 + 2j], dtype=np.complex64))
    save("u64.npy", np.array([1], dtype=np.uint64))


def npz_fixtures():
    # Keyword order is the archive order: not alphabetical, so the test sees it kept.
    arrays = dict(
        weight=np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32),
        bias=np.array([-0.5, 0.25], dtype=np.float32),
        alpha=np.array(7, dtype=np.int32),
    )
    np.savez(os.path.join(OUT, "stored.npz"), **arrays)
    # Compressible data, so the deflated entry differs from a stored one.
    np.savez_compressed(
        os.path.join(OUT, "compressed.npz"), zeros=np.zeros(256, dtype=np.float32), mask=np.array([True, False])
    )


def safetensors_fixture():
    bf16 = struct.pack("<3H", 0x3F80, 0xC000, 0x3F00)  # 1.0, -2.0, 0.5
    tensors = [
        ("w", "F32", [2, 2], struct.pack("<4f", 1.0, -2.0, 3.5, 0.25)),
        ("count", "I64", [], struct.pack("<q", -(2**40))),
        ("b", "BF16", [3], bf16),
        ("pix", "U8", [3], bytes([0, 200, 255])),
        ("mask", "BOOL", [2], bytes([1, 0])),
    ]
    header, data = {"__metadata__": {"format": "pt", "note": "lazuli fixture"}}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(OUT, "tiny.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


# GGUF value types (docs/gguf.md).
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALAR = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "?", U64: "Q", I64: "q", F64: "d"}


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_value(ty, v):
    if ty == STRING:
        return gguf_string(v)
    if ty == ARRAY:
        elem, items = v
        return struct.pack("<IQ", elem, len(items)) + b"".join(gguf_value(elem, x) for x in items)
    return struct.pack("<" + SCALAR[ty], v)


def gguf(version, kvs, tensors, alignment=32):
    """tensors: (name, ggml type, numpy-order shape, raw bytes)."""
    out = io.BytesIO()
    out.write(b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)))
    for key, ty, v in kvs:
        out.write(gguf_string(key) + struct.pack("<I", ty) + gguf_value(ty, v))
    offset, blobs = 0, []
    for name, ggml_type, shape, raw in tensors:
        dims = list(reversed(shape))  # ggml lists the fastest dimension first
        out.write(gguf_string(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims))
        out.write(struct.pack("<IQ", ggml_type, offset))
        pad = -len(raw) % alignment
        blobs.append(raw + b"\0" * pad)
        offset += len(raw) + pad
    out.write(b"\0" * (-out.tell() % alignment))
    out.write(b"".join(blobs))
    return out.getvalue()


def gguf_fixtures():
    kvs = [
        ("general.architecture", STRING, "llama"),
        ("general.alignment", U32, 64),
        ("test.u8", U8, 200),
        ("test.i8", I8, -5),
        ("test.u16", U16, 65535),
        ("test.i16", I16, -300),
        ("test.i32", I32, -70000),
        ("test.f32", F32, 0.5),
        ("test.bool", BOOL, True),
        ("test.u64", U64, 2**40),
        ("test.i64", I64, -(2**40)),
        ("test.f64", F64, -1.25),
        ("tokenizer.tokens", ARRAY, (STRING, ["a", "bc", ""])),
        ("test.nested", ARRAY, (ARRAY, [(I32, [1, 2]), (I32, [])])),
    ]
    tensors = [
        ("w", 0, [2, 3], np.arange(6, dtype="<f4").tobytes()),  # F32
        ("h", 1, [4], np.array([1, -0.5, 2048, 0], dtype="<f2").tobytes()),  # F16
        ("b", 30, [2], struct.pack("<2H", 0x3F80, 0xC040)),  # BF16: 1.0, -3.0
        ("i", 26, [2, 2], np.array([[1, -2], [3, -4]], dtype="<i4").tobytes()),  # I32
        ("c", 24, [3], np.array([-128, 0, 127], dtype="i1").tobytes()),  # I8
    ]
    with open(os.path.join(OUT, "tiny_v3.gguf"), "wb") as f:
        f.write(gguf(3, kvs, tensors, alignment=64))
    # Version 2, default alignment (32).
    with open(os.path.join(OUT, "tiny_v2.gguf"), "wb") as f:
        f.write(gguf(2, [("general.name", STRING, "v2")], [("x", 28, [2], struct.pack("<2d", 0.5, -8.0))]))  # F64
    # A quantised tensor: one Q8_0 block (an f16 scale and 32 int8 values).
    q8 = struct.pack("<e", 1.0) + bytes(32)
    with open(os.path.join(OUT, "q8_0.gguf"), "wb") as f:
        f.write(gguf(3, [], [("q", 8, [32], q8)]))


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    npy_fixtures()
    npz_fixtures()
    safetensors_fixture()
    gguf_fixtures()
    total = sum(os.path.getsize(os.path.join(OUT, n)) for n in os.listdir(OUT))
    print(f"wrote {len(os.listdir(OUT))} files, {total} bytes, to {OUT}")
