"""Prints the case table of tests/suite/format.rs: NumPy 2.x's str() and repr() of each
array (python3 tests/suite/format_cases.py > table, then paste into CASES)."""
import math
import numpy as np

def rust_str(s):
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n') + '"'

def f64_lit(x):
    if math.isnan(x): return 'f64::NAN'
    if math.isinf(x): return 'f64::INFINITY' if x > 0 else 'f64::NEG_INFINITY'
    r = repr(float(x))
    return r if ('.' in r or 'e' in r) else r + '.0'

# (name, dtype, shape, (Rust, Python) expressions of the values over the flat index i
# (None: the literal list that follows), values, precision)
cases = [
    ("scalar f64", "float64", (), None, [0.1], None),
    ("scalar f32 third", "float32", (), None, [1 / 3], None),
    ("scalar f32 large", "float32", (), None, [3e7], None),
    ("scalar int", "int32", (), None, [-7], None),
    ("scalar bool", "bool", (), None, [1], None),
    ("1-D f32", "float32", (3,), None, [1.0, 2.5, -3.0], None),
    ("2-D f64", "float64", (2, 2), None, [1.0, 2.0, 3.0, 4.0], None),
    ("3-D i32", "int32", (2, 3, 4), ("i as f64", lambda i: i), None, None),
    ("empty [0]", "float32", (0,), None, [], None),
    ("empty [2, 0]", "float64", (2, 0), None, [], None),
    ("f32 mixed magnitudes", "float32", (4,), None, [0.001, 1.0, 123.456, -0.5], None),
    ("f64 large to scientific", "float64", (2,), None, [1e8, 1.5], None),
    ("f32 large to scientific", "float32", (2,), None, [1e6, 2.5], None),
    ("f32 small to scientific", "float32", (3,), None, [1e-5, 1.0, -2.5], None),
    ("f64 wide ratio", "float64", (2,), None, [0.5, 1234.0], None),
    ("nan and inf", "float32", (4,), None, [math.nan, math.inf, -math.inf, 1.5], None),
    ("only non-finite", "float64", (2,), None, [math.nan, -math.inf], None),
    ("negative zero", "float32", (3,), None, [-0.0, 0.0, 1.0], None),
    ("i64 negatives", "int64", (3,), None, [-100, 5, 42], None),
    ("u32", "uint32", (3,), None, [0, 7, 4000000000], None),
    ("bool 2-D", "bool", (2, 2), None, [1, 0, 0, 1], None),
    ("f16", "float16", (4,), None, [0.1, 0.2, 1.2345, -65504.0], None),
    ("f16 small", "float16", (3,), None, [0.1, 0.2, 1.2345], None),
    ("summarised 2000", "float32", (2000,), ("i as f64", lambda i: i), None, None),
    ("summarised 100x100", "float32", (100, 100), ("(i % 97) as f64 / 8.0", lambda i: (i % 97) / 8.0), None, None),
    ("wrapped 1x30 row", "float32", (1, 30), ("i as f64 * 0.5 - 3.25", lambda i: i * 0.5 - 3.25), None, None),
    ("wrapped 1x30 f64 sci", "float64", (1, 30), ("(i as f64 + 1.0) * 1e6", lambda i: (i + 1.0) * 1e6), None, None),
    ("precision 3", "float64", (3,), None, [1 / 3, 2 / 3, 10.0], 3),
    ("precision 3 scientific", "float64", (2,), None, [1e-5, 1 / 3], 3),
    ("precision 3 scalar", "float64", (), None, [1 / 3], 3),
]

for name, dt, shape, expr, vals, prec in cases:
    n = math.prod(shape)
    if expr is not None:
        # The same values as the Rust expression (all exact in float64).
        rust, py = expr
        v = py(np.arange(n, dtype=np.float64))
        values = f"Values::Fn(|i| {rust})"
    else:
        v = np.array(vals, dtype=np.float64)
        values = "Values::Lit(&[" + ", ".join(f64_lit(x) for x in vals) + "])"
    a = np.asarray(v).astype(dt).reshape(shape)
    with np.printoptions(precision=8 if prec is None else prec):
        s = np.array2string(a) if (prec is not None and a.ndim == 0) else str(a)
        r = repr(a)
    print(f"    Case {{\n        name: {rust_str(name)},\n        dtype: DType::{ {'float64':'F64','float32':'F32','float16':'F16','int32':'I32','int64':'I64','uint32':'U32','bool':'Bool'}[dt] },")
    print(f"        shape: &{list(shape)},\n        values: {values},\n        precision: {'None' if prec is None else f'Some({prec})'},")
    print(f"        str: {rust_str(s)},\n        repr: {rust_str(r)},\n    }},")
