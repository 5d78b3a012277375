"""Writes the fixture of tests/suite/numpy_diff.rs: seeded inputs and NumPy's answers.

Regenerate (deterministic: fixed seed, NumPy 2.x; the committed files are its output):

    python3 tests/suite/numpy_diff_cases.py

Output, in tests/fixtures/numpy_diff/:
- cases.npz (compressed): the inputs `in.0`, `in.1`... (each stored once, shared by the
  cases that use it) in the dtype lazuli gets them in; for case NAME the expected result
  `NAME.want` in the dtype lazuli documents for the op, and, where an input holds
  subnormals, `NAME.want_ftz`: the answer when the
  device reads subnormal inputs as zeros of their sign (WGSL allows it, NVIDIA does it;
  README "GPU backend"). A GPU element passes when it matches either.
- cases.txt: one line per case, `NAME OP CPU_TOL GPU_TOL INPUTS [KEY=VALUE...]`, INPUTS
  the comma-separated input names in operand order.
  Tolerance names are the constants of numpy_diff.rs. Keys: `v0`, `v1`... a view applied
  to that input before the op (`t:1,0,2` transpose, `T` reversed axes, `s:1:7:2,::-1`
  slice per axis, `b:3,4` broadcast_to; several joined with `|`), `axes` (comma list,
  `all` for every axis), `axis`, `keepdims`, `ddof`, `reverse`.

References: exact ops (arithmetic, rounding, comparisons, integer ops, max/min) are NumPy's
own result in the input dtype. Transcendentals, reductions and matmul are NumPy computed
in float64 from the same inputs and rounded to float32 once: closer to the true value
than NumPy's float32 kernels, so the tolerance measures lazuli's error alone. NumPy has
no erf/erfinv: erf is Python's math.erf (C libm) and erfinv its Newton inverse, in f64.

Where lazuli documents a dtype rule other than NumPy's (MLX's promotion rules, src/ops/
binary.rs and reduce.rs), the reference follows lazuli's documented rule and says so at
the case: bool arithmetic in int32, integer true division in float32, integer sums and
scans keep their dtype (wrapping), argmax/argmin give uint32, integer mean is float32,
integer matmul computes in float32.

Left out on purpose: sums whose f32 result depends on the accumulation order (catastrophic
cancellation such as [1e8, 1, -1e8], or partial sums that overflow): the GPU accumulates in
f32 as documented (README, "GPU backend"), giving NumPy's own float32 answer, while the
reference here is the exact sum.
"""
import math
import os
import warnings

import numpy as np

rng = np.random.default_rng(20240607)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "numpy_diff")

arrays = {}
input_keys = {}
lines = []

F32 = np.float32
TINY = np.finfo(np.float32).tiny  # smallest normal f32


# ------------------------------------------------------------------------------------
# Views, as numpy_diff.rs applies them.

def apply_view(x, spec):
    for part in spec.split("|"):
        if part == "T":
            x = x.T
        elif part.startswith("t:"):
            x = np.transpose(x, [int(v) for v in part[2:].split(",")])
        elif part.startswith("b:"):
            x = np.broadcast_to(x, [int(v) for v in part[2:].split(",")])
        elif part.startswith("s:"):
            idx = []
            for ax in part[2:].split(","):
                # `start:stop` or `start:stop:step`, each part possibly empty.
                parts = (ax.split(":") + [""])[:3]
                lo, hi, st = (None if v == "" else int(v) for v in parts)
                idx.append(slice(lo, hi, st))
            x = x[tuple(idx)]
        else:
            raise ValueError(part)
    return x


def flush(x):
    """Subnormal floats as zeros of their sign (what a flushing GPU reads)."""
    x = np.array(x, copy=True)
    if x.dtype.kind == "f":
        tiny = np.finfo(x.dtype).tiny
        sub = (x != 0) & (np.abs(x) < tiny)
        x[sub] = np.copysign(np.zeros((), x.dtype), x[sub])
    return x


def has_subnormal(x):
    return x.dtype.kind == "f" and bool(np.any((x != 0) & (np.abs(x) < np.finfo(x.dtype).tiny)))


def case(name, op, inputs, ref, cpu, gpu, out_dtype, **params):
    """Records case `name`: `ref(*viewed_inputs)` is NumPy's answer, cast to `out_dtype`."""
    assert name not in arrays and " " not in name
    views = {int(k[1:]): v for k, v in params.items() if k[0] == "v" and k[1:].isdigit()}

    def compute(ins):
        viewed = [apply_view(x, views[i]) if i in views else x for i, x in enumerate(ins)]
        # NaN, inf and ddof >= n are the point of some cases: no warnings for them.
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.asarray(ref(*viewed)).astype(out_dtype)

    want = compute(inputs)
    keys = [input_key(x) for x in inputs]
    arrays[f"{name}.want"] = want
    if any(has_subnormal(x) for x in inputs):
        ftz = compute([flush(x) for x in inputs])
        same = np.array_equal(ftz, want, equal_nan=True) and np.array_equal(
            np.signbit(ftz), np.signbit(want)) if ftz.dtype.kind == "f" else np.array_equal(ftz, want)
        if not same:
            arrays[f"{name}.want_ftz"] = ftz
    kv = " ".join(f"{k}={v}" for k, v in params.items())
    lines.append(f"{name} {op} {cpu} {gpu} {','.join(keys)} {kv}".rstrip())


def input_key(x):
    """The name input `x` is stored under: `in.N`, shared by every case that uses the same
    array (each archive entry costs ~300 bytes of headers)."""
    x = np.ascontiguousarray(x)
    sig = (x.dtype.str, x.shape, x.tobytes())
    if sig not in input_keys:
        input_keys[sig] = f"in.{len(input_keys)}"
        arrays[input_keys[sig]] = x
    return input_keys[sig]


def f64(x):
    return np.asarray(x, np.float64)


# ------------------------------------------------------------------------------------
# Inputs.

SPECIAL = np.array([
    0.0, -0.0, np.inf, -np.inf, np.nan,
    1e-45, -1e-45, 1e-40, -3e-39, TINY, -TINY,  # subnormals and the smallest normal
    1e-30, -1e-30, 1e30, -1e30, 3e38, -3e38, np.finfo(F32).max,  # tiny and huge
    1.0, -1.0, 1.0000001, 0.99999994, 0.5, -0.5, 1.5, 2.5, -2.5, 0.49999997,  # near 1, ties
    88.7, -88.7, 89.0, -104.0, 1e-7, -1e-7, 1e-3, math.pi, 20.0, -20.0, 1e4, -3e4,
], F32)


def unary_input(n_random=28, lo=-10.0, hi=10.0):
    r = rng.uniform(lo, hi, n_random).astype(F32)
    return np.concatenate([SPECIAL, r]).reshape(4, -1)


def unit_input(n_random=28):
    """For erfinv: the specials, plus values in (-1, 1) and the edges ±1."""
    r = rng.uniform(-1, 1, n_random).astype(F32)
    edges = np.array([1.0, -1.0, 0.9999999, -0.9999999, 1e-20, 1.5, -2.0, 0.0], F32)
    return np.concatenate([SPECIAL[:8], edges, r]).reshape(4, -1)


def erfinv64(y):
    """erfinv by Newton's method on math.erf (f64), ±inf at ±1 and NaN outside."""
    def one(v):
        if math.isnan(v) or abs(v) > 1:
            return math.nan
        if abs(v) == 1:
            return math.copysign(math.inf, v)
        if v == 0:
            return v
        # Start from Giles' approximation's simple form, then polish.
        w = -math.log((1 - v) * (1 + v))
        x = math.copysign(math.sqrt(max(w - math.log(w + 1e-300) * 0.5, 1e-300)), v) if w > 5 else v * 0.886
        for _ in range(100):
            e = math.erf(x) - v
            step = e / (2 / math.sqrt(math.pi) * math.exp(-x * x))
            x -= step
            if abs(step) <= 1e-17 * abs(x):
                break
        return x
    return np.vectorize(one, otypes=[np.float64])(f64(y))


def rsqrt64(x):
    return 1.0 / np.sqrt(f64(x))


def sigmoid64(x):
    x = f64(x)
    return np.where(x >= 0, 1 / (1 + np.exp(-x)), np.exp(x) / (1 + np.exp(x)))


# ------------------------------------------------------------------------------------
# Unary ops on f32 (and f16).

# (op, reference, cpu tolerance, gpu tolerance, exact in f32?)
UNARY = [
    ("neg", np.negative, "EXACT", "EXACT", True),
    ("abs", np.abs, "EXACT", "EXACT", True),
    ("sign", np.sign, "EXACT", "EXACT", True),
    ("square", np.square, "EXACT", "EXACT", True),
    ("floor", np.floor, "EXACT", "EXACT", True),
    ("ceil", np.ceil, "EXACT", "EXACT", True),
    ("round", np.round, "EXACT", "EXACT", True),
    ("isnan", np.isnan, "EXACT", "EXACT", True),
    ("isinf", np.isinf, "EXACT", "EXACT", True),
    ("logical_not", np.logical_not, "EXACT", "EXACT", True),
    ("exp", lambda x: np.exp(f64(x)), "TRANS", "TRANS", False),
    ("expm1", lambda x: np.expm1(f64(x)), "TRANS", "TRANS", False),
    ("log", lambda x: np.log(f64(x)), "TRANS", "TRANS", False),
    ("log1p", lambda x: np.log1p(f64(x)), "TRANS", "TRANS", False),
    ("log2", lambda x: np.log2(f64(x)), "TRANS", "TRANS", False),
    # IEEE sqrt and 1/x are correctly rounded on the CPU; WGSL allows a few ulp.
    ("sqrt", lambda x: np.sqrt(f64(x)), "EXACT", "ULP4", False),
    ("reciprocal", lambda x: 1.0 / f64(x), "EXACT", "ULP4", False),
    ("rsqrt", rsqrt64, "ULP4", "ULP4", False),
    ("sin", lambda x: np.sin(f64(x)), "TRANS", "TRIG", False),
    ("cos", lambda x: np.cos(f64(x)), "TRANS", "TRIG", False),
    ("tanh", lambda x: np.tanh(f64(x)), "TRANS", "TRANS", False),
    ("sigmoid", sigmoid64, "TRANS", "TRANS", False),
    ("erf", lambda x: np.vectorize(math.erf, otypes=[np.float64])(f64(x)), "TRANS", "TRANS", False),
]


def add_unary():
    x = unary_input()
    for op, ref, cpu, gpu, exact in UNARY:
        out = bool if op in ("isnan", "isinf", "logical_not") else F32
        case(f"unary.{op}.f32", op, [x], ref, cpu, gpu, out)
    # tan: WGSL bounds it only on [-1, 1] (sin/cos's absolute error over cos^2), so its
    # random part stays there; the specials still cover zeros, infinities and NaN.
    t = np.concatenate([SPECIAL[:5], rng.uniform(-1, 1, 27).astype(F32)]).reshape(4, 8)
    case("unary.tan.f32", "tan", [t], lambda v: np.tan(f64(v)), "TRANS", "TRIG", F32)
    case("unary.erfinv.f32", "erfinv", [unit_input()], erfinv64, "TRANS", "TRANS", F32)

    # f16: NumPy computes float16 ops in float32 and rounds once; the reference here is
    # f64 rounded to f16, within HALF of either.
    h = np.concatenate([
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 6e-8, -6e-8, 6.1e-5, 65504.0, -65504.0,
                  1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 11.0, -11.0, 1e-3, 100.0], np.float16),
        rng.uniform(-8, 8, 28).astype(np.float16),
    ]).reshape(4, 12)
    for op, ref, cpu, gpu, exact in UNARY:
        if op in ("isnan", "isinf", "logical_not"):
            continue
        tol = "EXACT" if exact else "HALF"
        case(f"unary.{op}.f16", op, [h], ref, tol, tol, np.float16)
    # Integer neg/abs wrap at the minimum, as NumPy's.
    i = np.array([0, 1, -1, 7, -7, 2**31 - 1, -2**31, 46341], np.int32)
    for op, ref in [("neg", np.negative), ("abs", np.abs), ("square", np.square), ("sign", np.sign)]:
        case(f"unary.{op}.i32", op, [i], ref, "EXACT", "EXACT", np.int32)
    # Integer input to a float op is cast to float32 first (documented).
    case("unary.exp.i32", "exp", [np.arange(-5, 5, dtype=np.int32)],
         lambda v: np.exp(f64(v.astype(F32))), "TRANS", "TRANS", F32)


# ------------------------------------------------------------------------------------
# Binary ops with broadcasting.

FLOAT_B = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -3.0, 0.5, 1e-40, 1e30,
                    -1e30, 7.0, -7.5, 3.0], F32)


def float_pair(sa, sb):
    """Two f32 arrays of shapes sa, sb: every special against every special where the
    shapes allow, plus random values."""
    a = rng.uniform(-20, 20, sa).astype(F32)
    b = rng.uniform(-20, 20, sb).astype(F32)
    fa, fb = a.reshape(-1), b.reshape(-1)
    k = len(FLOAT_B)
    fa[: min(k, fa.size)] = FLOAT_B[: min(k, fa.size)]
    # b: the specials rotated, so specials meet each other in many combinations.
    rot = np.roll(np.tile(FLOAT_B, 4), 5)
    fb[: min(fb.size, rot.size)] = rot[: min(fb.size, rot.size)]
    return a, b


# (op, NumPy ufunc, cpu tol, gpu tol)
FLOAT_BINARY = [
    ("add", np.add, "EXACT", "EXACT"),
    ("sub", np.subtract, "EXACT", "EXACT"),
    ("mul", np.multiply, "EXACT", "EXACT"),
    ("div", np.divide, "EXACT", "ULP4"),
    ("maximum", np.maximum, "EXACT", "EXACT"),
    ("minimum", np.minimum, "EXACT", "EXACT"),
    # A quotient from 2^22 up inherits the GPU's division error (WGSL allows 2.5 ulp; on
    # an H100 1.3186078e29 came out an ulp low); below, ULP4 is under 1, so still exact.
    ("floor_divide", np.floor_divide, "EXACT", "ULP4"),
    ("remainder", np.remainder, "EXACT", "EXACT"),
    ("eq", np.equal, "EXACT", "EXACT"),
    ("ne", np.not_equal, "EXACT", "EXACT"),
    ("lt", np.less, "EXACT", "EXACT"),
    ("le", np.less_equal, "EXACT", "EXACT"),
    ("gt", np.greater, "EXACT", "EXACT"),
    ("ge", np.greater_equal, "EXACT", "EXACT"),
    ("pow", lambda a, b: np.power(f64(a), f64(b)), "TRANS", "TRANS"),
    ("atan2", lambda a, b: np.arctan2(f64(a), f64(b)), "TRANS", "ATAN2_GPU"),
    ("logical_and", np.logical_and, "EXACT", "EXACT"),
    ("logical_or", np.logical_or, "EXACT", "EXACT"),
    ("logical_xor", np.logical_xor, "EXACT", "EXACT"),
]
CMP = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"}

SHAPES = [((4, 16), (4, 16)), ((3, 1, 16), (5, 16)), ((16,), (2, 3, 16)), ((4, 1), (1, 16))]


def add_binary():
    for op, ref, cpu, gpu in FLOAT_BINARY:
        for k, (sa, sb) in enumerate(SHAPES):
            if k > 0 and op in CMP - {"lt", "eq"}:
                continue  # one shape is enough for the rest of the comparisons
            a, b = float_pair(sa, sb)
            out = bool if op in CMP else F32
            case(f"binary.{op}.f32.{k}", op, [a, b], ref, cpu, gpu, out)

    # Every special against every special (signed zeros against each other included).
    grid = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.5, -3.0, 1e-40, -1e30, 7.0], F32)
    ga, gb = np.repeat(grid, len(grid)).reshape(12, 12), np.tile(grid, len(grid)).reshape(12, 12)
    for op, ref, cpu, gpu in FLOAT_BINARY:
        case(f"binary.{op}.f32.grid", op, [ga, gb], ref, cpu, gpu, bool if op in CMP else F32)

    # pow with integral and fractional exponents of negative bases, 0^0, inf^0, 1^nan...
    base = np.array([-2.0, -2.0, -8.0, 0.0, -0.0, 0.0, np.inf, 1.0, np.nan, -1.0, -1.0, 2.0, 10.0, 0.5], F32)
    expo = np.array([3.0, 0.5, 1 / 3, 0.0, -1.0, -2.0, 0.0, np.nan, 0.0, np.inf, -np.inf, 100.0, -30.0, 2.5], F32)
    case("binary.pow.specials", "pow", [base, expo], lambda a, b: np.power(f64(a), f64(b)), "TRANS", "TRANS", F32)

    # Integers: wrapping arithmetic, floor division and remainder by zero (0, as NumPy),
    # the minimum over -1, comparisons.
    edges32 = [0, 1, -1, 2, -2, 7, -7, 3, 2**31 - 1, -2**31, 65536, 46341, -46341]
    ints = {
        "i32": (np.int32, edges32),
        "i64": (np.int64, [0, 1, -1, 2, -2, 7, -7, 3, 2**63 - 1, -2**63, 2**32, 3037000500, -3037000500]),
        "u32": (np.uint32, [0, 1, 2, 3, 7, 2**32 - 1, 2**31, 65536, 65537, 100, 5, 9, 4294967294]),
    }
    for tname, (dt, edges) in ints.items():
        info = np.iinfo(dt)
        e = np.array(edges, dt)
        a = np.concatenate([np.repeat(e, len(e)), rng.integers(max(info.min, -1000), 1000, 31, dtype=dt)])
        b = np.concatenate([np.tile(e, len(e)), rng.integers(max(info.min, -50), 50, 31, dtype=dt)])
        a, b = a.reshape(-1, 25), b.reshape(-1, 25)
        for op, ref in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                        ("floor_divide", np.floor_divide), ("remainder", np.remainder),
                        ("maximum", np.maximum), ("minimum", np.minimum)]:
            case(f"binary.{op}.{tname}", op, [a, b], ref, "EXACT", "EXACT", dt)
        for op, ref in [("lt", np.less), ("eq", np.equal), ("ge", np.greater_equal)]:
            case(f"binary.{op}.{tname}", op, [a, b], ref, "EXACT", "EXACT", bool)
        # Integer true division gives float32 from float32 operands (lazuli's documented
        # rule; NumPy gives float64).
        case(f"binary.div.{tname}", "div", [a, b], lambda x, y: np.divide(x.astype(F32), y.astype(F32)),
             "EXACT", "ULP4", F32)
        # Broadcast against a row.
        case(f"binary.add.{tname}.bcast", "add", [a, b[:1]], np.add, "EXACT", "EXACT", dt)
        # pow with small non-negative exponents (negative integer exponents are documented
        # as backend-defined; NumPy raises), no overflow.
        pa = rng.integers(0 if dt == np.uint32 else -9, 10, 40, dtype=dt)
        pb = rng.integers(0, 8, 40, dtype=dt)
        case(f"binary.pow.{tname}", "pow", [pa, pb], np.power, "EXACT", "EXACT", dt)

    # Bool: arithmetic in int32 (documented; NumPy's bool + bool is a bool), max/min are
    # or/and, comparisons of bools.
    ba = rng.integers(0, 2, (3, 8)).astype(bool)
    bb = rng.integers(0, 2, (8,)).astype(bool)
    for op, ref, out in [("add", np.add, np.int32), ("sub", np.subtract, np.int32),
                         ("mul", np.multiply, np.int32), ("maximum", np.maximum, bool),
                         ("minimum", np.minimum, bool), ("lt", np.less, bool), ("eq", np.equal, bool),
                         ("logical_xor", np.logical_xor, bool)]:
        case(f"binary.{op}.bool", op, [ba, bb],
             (lambda r, o: (lambda x, y: r(x.astype(np.int32), y.astype(np.int32)) if o == np.int32 else r(x, y)))(
                 ref, out), "EXACT", "EXACT", out)

    # Mixed dtypes: lazuli promotes as MLX does (i32 with f32 gives f32; u32 with i32
    # gives i32), NumPy to a wider type; the reference casts to lazuli's documented type.
    xi = rng.integers(-100, 100, (2, 8), dtype=np.int32)
    xf = rng.uniform(-5, 5, (8,)).astype(F32)
    case("binary.mul.i32_f32", "mul", [xi, xf], lambda x, y: x.astype(F32) * y, "EXACT", "EXACT", F32)
    xu = rng.integers(0, 100, (8,), dtype=np.uint32)
    case("binary.sub.u32_i32", "sub", [xu, xi], lambda x, y: x.astype(np.int32) - y, "EXACT", "EXACT", np.int32)

    # where(cond, a, b) with broadcasting.
    c = rng.integers(0, 2, (3, 1, 5)).astype(bool)
    wa = rng.uniform(-1, 1, (4, 5)).astype(F32)
    wa[0, :3] = [np.nan, -0.0, np.inf]
    wb = rng.uniform(-1, 1, (5,)).astype(F32)
    case("binary.where.f32", "where", [c, wa, wb], np.where, "EXACT", "EXACT", F32)


# ------------------------------------------------------------------------------------
# Views: transposed, stepped and reversed slices, broadcasts, as inputs to ops.

def add_views():
    x = rng.uniform(-4, 4, (6, 7, 5)).astype(F32)
    x[0, 0, :3] = [np.nan, -0.0, np.inf]
    y = rng.uniform(-4, 4, (6, 7)).astype(F32)
    z = rng.uniform(-4, 4, (8, 5)).astype(F32)
    case("view.transpose.neg", "neg", [x], np.negative, "EXACT", "EXACT", F32, v0="t:2,0,1")
    case("view.T.add", "add", [x, y], np.add, "EXACT", "EXACT", F32, v0="T", v1="T")
    case("view.slice.step.mul", "mul", [x, z], np.multiply, "EXACT", "EXACT", F32,
         v0="s:1:6:2,::-2", v1="s:::-2,:")
    case("view.slice.neg.exp", "exp", [x], lambda v: np.exp(f64(v)), "TRANS", "TRANS", F32,
         v0="s:-1::-1,5:1:-1,::-1")
    case("view.bcast.sub", "sub", [y, x], np.subtract, "EXACT", "EXACT", F32,
         v0="s:0:1,:|b:6,5,7|t:0,2,1")
    case("view.chain.floor", "floor", [x], np.floor, "EXACT", "EXACT", F32, v0="t:1,2,0|s:::2,1:4,::-1|T")
    case("view.slice.sum", "sum", [x], lambda v: np.sum(f64(v), axis=1), "RED", "RED", F32,
         v0="s:::-1,::2,1:", axes="1", keepdims="0")
    case("view.T.max", "max", [x], lambda v: np.max(v, axis=(0, 2), keepdims=True), "EXACT", "EXACT", F32,
         v0="t:2,0,1", axes="0,2", keepdims="1")
    xi = rng.integers(-50, 50, (4, 6), dtype=np.int32)
    case("view.slice.i32.sub", "sub", [xi, xi], np.subtract, "EXACT", "EXACT", np.int32,
         v0="s:::-2,::-1", v1="s:1::2,:")


# ------------------------------------------------------------------------------------
# Reductions and scans.

def add_reductions():
    x = rng.uniform(-3, 3, (5, 6, 7)).astype(F32)
    xn = x.copy()
    xn[1, 2, 3] = np.nan
    xn[3, 0, 1] = np.inf
    xn[4, 5, 6] = -np.inf
    axes_list = [("all", None), ("0", (0,)), ("1", (1,)), ("2", (2,)), ("0,2", (0, 2))]

    def axes_tag(a):
        return a.replace(",", "")

    for at, ax in axes_list:
        for keep in (0, 1):
            if keep and at not in ("1", "0,2"):
                continue  # keepdims on a middle axis and a pair covers the reshape
            kw = dict(axes=at, keepdims=str(keep))
            tag = f"ax{axes_tag(at)}.k{keep}"
            case(f"reduce.sum.{tag}", "sum", [x], lambda v: np.sum(f64(v), axis=ax, keepdims=bool(keep)),
                 "RED", "RED", F32, **kw)
            case(f"reduce.mean.{tag}", "mean", [x], lambda v: np.mean(f64(v), axis=ax, keepdims=bool(keep)),
                 "RED", "RED", F32, **kw)
            case(f"reduce.max.{tag}", "max", [xn], lambda v: np.max(v, axis=ax, keepdims=bool(keep)),
                 "EXACT", "EXACT", F32, **kw)
            case(f"reduce.min.{tag}", "min", [xn], lambda v: np.min(v, axis=ax, keepdims=bool(keep)),
                 "EXACT", "EXACT", F32, **kw)
            case(f"reduce.logsumexp.{tag}", "logsumexp", [x], lambda v: lse64(v, ax, bool(keep)),
                 "RED", "RED", F32, **kw)
    # prod: values near 1 so the product stays in range.
    p = rng.uniform(0.5, 1.5, (4, 5, 6)).astype(F32)
    for at, ax in axes_list:
        case(f"reduce.prod.ax{axes_tag(at)}", "prod", [p], lambda v: np.prod(f64(v), axis=ax), "RED", "RED", F32,
             axes=at, keepdims="0")
    for ddof in (0, 1):
        for at, ax in [("all", None), ("1", (1,)), ("0,2", (0, 2))]:
            case(f"reduce.var.ax{axes_tag(at)}.d{ddof}", "var", [x],
                 lambda v: np.var(f64(v), axis=ax, ddof=ddof), "RED", "RED", F32, axes=at, keepdims="0",
                 ddof=str(ddof))
    # NaN and infinities through sum/mean/logsumexp: NaN in, NaN out.
    case("reduce.sum.nan", "sum", [xn], lambda v: np.sum(f64(v), axis=2), "RED", "RED", F32, axes="2", keepdims="0")
    case("reduce.logsumexp.inf", "logsumexp", [xn], lambda v: lse64(v, (1,), False), "RED", "RED", F32,
         axes="1", keepdims="0")
    # argmax / argmin: uint32 (documented; NumPy gives int64), ties give the first.
    ties = rng.integers(-3, 3, (5, 6, 7)).astype(F32)
    for axis in (0, 1, 2, -1):
        for keep in (0, 1):
            if keep and axis != 1:
                continue
            kw = dict(axis=str(axis), keepdims=str(keep))
            case(f"reduce.argmax.a{axis}.k{keep}", "argmax", [ties],
                 lambda v: np.argmax(v, axis=axis, keepdims=bool(keep)), "EXACT", "EXACT", np.uint32, **kw)
            case(f"reduce.argmin.a{axis}.k{keep}", "argmin", [ties],
                 lambda v: np.argmin(v, axis=axis, keepdims=bool(keep)), "EXACT", "EXACT", np.uint32, **kw)
    # argmax with NaN: NaN counts as largest (documented, as NumPy).
    case("reduce.argmax.nan", "argmax", [xn], lambda v: np.argmax(v, axis=2), "EXACT", "EXACT", np.uint32,
         axis="2", keepdims="0")
    # Integer reductions keep their dtype and wrap (documented; NumPy's default is int64,
    # so the reference asks for int32 explicitly). Integer mean is float32.
    xi = rng.integers(-2**31, 2**31 - 1, (4, 9), dtype=np.int32)
    xi[0, :3] = [2**31 - 1, 2**31 - 1, 5]
    case("reduce.sum.i32", "sum", [xi], lambda v: np.sum(v, axis=1, dtype=np.int32), "EXACT", "EXACT", np.int32,
         axes="1", keepdims="0")
    case("reduce.max.i32", "max", [xi], lambda v: np.max(v, axis=0), "EXACT", "EXACT", np.int32, axes="0",
         keepdims="0")
    case("reduce.min.i32", "min", [xi], lambda v: np.min(v), "EXACT", "EXACT", np.int32, axes="all", keepdims="0")
    case("reduce.mean.i32", "mean", [xi], lambda v: np.mean(f64(v), axis=1), "RED", "RED", F32, axes="1",
         keepdims="0")
    case("reduce.argmax.i32", "argmax", [xi], lambda v: np.argmax(v, axis=1), "EXACT", "EXACT", np.uint32,
         axis="1", keepdims="0")
    small = rng.integers(-3, 4, (3, 5), dtype=np.int32)
    case("reduce.prod.i32", "prod", [small], lambda v: np.prod(v, axis=1, dtype=np.int32), "EXACT", "EXACT",
         np.int32, axes="1", keepdims="0")
    xu = rng.integers(0, 2**32, (3, 7), dtype=np.uint32)
    case("reduce.sum.u32", "sum", [xu], lambda v: np.sum(v, axis=0, dtype=np.uint32), "EXACT", "EXACT",
         np.uint32, axes="0", keepdims="0")
    # any / all over bool and float input (non-zero is true; NaN is true).
    bz = rng.integers(0, 4, (4, 5, 6)) == 0
    fz = np.where(rng.integers(0, 3, (4, 5, 6)) == 0, 0.0, 1.0).astype(F32)
    fz[0, 0, :] = -0.0
    fz[1, 1, 1] = np.nan
    for at, ax in [("all", None), ("0", (0,)), ("2", (2,)), ("0,2", (0, 2))]:
        case(f"reduce.any.b.ax{axes_tag(at)}", "any", [bz], lambda v: np.any(v, axis=ax), "EXACT", "EXACT", bool,
             axes=at, keepdims="0")
        case(f"reduce.all.f.ax{axes_tag(at)}", "all", [fz], lambda v: np.all(v, axis=ax), "EXACT", "EXACT", bool,
             axes=at, keepdims="0")
    case("reduce.all.b.ax1.k1", "all", [~bz], lambda v: np.all(v, axis=1, keepdims=True), "EXACT", "EXACT", bool,
         axes="1", keepdims="1")
    # sum of bool counts in int32 (documented).
    case("reduce.sum.bool", "sum", [bz], lambda v: np.sum(v, axis=2, dtype=np.int32), "EXACT", "EXACT", np.int32,
         axes="2", keepdims="0")

    # Scans: cumsum / cumprod along each axis, forward and reversed.
    s = rng.uniform(-2, 2, (4, 5, 6)).astype(F32)
    sp = rng.uniform(0.6, 1.4, (4, 5, 6)).astype(F32)
    for axis in (0, 1, 2):
        for rev in (0, 1):
            kw = dict(axis=str(axis), reverse=str(rev))
            case(f"scan.cumsum.a{axis}.r{rev}", "cumsum", [s], lambda v: scan64(np.cumsum, v, axis, rev),
                 "RED", "RED", F32, **kw)
            case(f"scan.cumprod.a{axis}.r{rev}", "cumprod", [sp], lambda v: scan64(np.cumprod, v, axis, rev),
                 "RED", "RED", F32, **kw)
    si = rng.integers(-2**31, 2**31 - 1, (3, 6), dtype=np.int32)
    case("scan.cumsum.i32", "cumsum", [si], lambda v: np.cumsum(v, axis=1, dtype=np.int32), "EXACT", "EXACT",
         np.int32, axis="1", reverse="0")
    case("scan.cumsum.bool", "cumsum", [bz], lambda v: np.cumsum(v, axis=-1, dtype=np.int32), "EXACT", "EXACT",
         np.int32, axis="-1", reverse="0")
    case("scan.cumprod.i32", "cumprod", [small], lambda v: np.cumprod(v, axis=1, dtype=np.int32), "EXACT",
         "EXACT", np.int32, axis="1", reverse="0")
    case("scan.cumsum.nan", "cumsum", [xn], lambda v: np.cumsum(f64(v), axis=2), "RED", "RED", F32, axis="2",
         reverse="0")

    # softmax over one or several axes, with large logits (the max is subtracted).
    sm = rng.uniform(-5, 5, (3, 4, 9)).astype(F32)
    sm[0, 0, 0] = 80.0
    sm[1, 1, :] = 60.0
    for at, ax in [("2", (2,)), ("0", (0,)), ("1,2", (1, 2)), ("all", None)]:
        case(f"softmax.ax{axes_tag(at)}", "softmax", [sm], lambda v: softmax64(v, ax), "RED", "RED", F32, axes=at)
    case("softmax.f16", "softmax", [sm.astype(np.float16)], lambda v: softmax64(v, (2,)), "HALF", "HALF",
         np.float16, axes="2")
    case("reduce.sum.f16", "sum", [s.astype(np.float16)], lambda v: np.sum(f64(v), axis=2), "HALF", "HALF",
         np.float16, axes="2", keepdims="0")


def lse64(v, ax, keep):
    v = f64(v)
    m = np.max(v, axis=ax, keepdims=True)
    m = np.where(np.isinf(m), 0.0, m)
    r = np.log(np.sum(np.exp(v - m), axis=ax, keepdims=True)) + m
    return r if keep else (np.squeeze(r, axis=ax) if ax is not None else r.reshape(()))


def scan64(f, v, axis, rev):
    v = f64(v)
    if rev:
        return np.flip(f(np.flip(v, axis), axis=axis), axis)
    return f(v, axis=axis)


def softmax64(v, ax):
    v = f64(v)
    e = np.exp(v - np.max(v, axis=ax, keepdims=True))
    return e / np.sum(e, axis=ax, keepdims=True)


# ------------------------------------------------------------------------------------
# Matmul: small odd shapes, vectors, batch broadcasting, a transposed operand.

def add_matmul():
    def mm(a, b):
        return np.matmul(f64(a), f64(b))

    for name, sa, sb in [("3x5.5x7", (3, 5), (5, 7)), ("1x1.1x1", (1, 1), (1, 1)), ("vec.mat", (5,), (5, 3)),
                         ("mat.vec", (3, 5), (5,)), ("vec.vec", (7,), (7,)),
                         ("batch", (2, 1, 3, 4), (3, 4, 5)), ("batch.vec", (2, 3, 4), (4,)),
                         ("17x33.33x9", (17, 33), (33, 9))]:
        a = rng.uniform(-1, 1, sa).astype(F32)
        b = rng.uniform(-1, 1, sb).astype(F32)
        case(f"matmul.{name}", "matmul", [a, b], mm, "RED", "RED", F32)
    a = rng.uniform(-1, 1, (6, 4)).astype(F32)
    b = rng.uniform(-1, 1, (5, 6)).astype(F32)
    case("matmul.transposed", "matmul", [a, b], mm, "RED", "RED", F32, v0="T", v1="T")
    case("matmul.sliced", "matmul", [a, b], mm, "RED", "RED", F32, v0="s:::2,::-1", v1="s:1:5,::2")
    ai = rng.integers(-5, 5, (3, 4), dtype=np.int32)
    bi = rng.integers(-5, 5, (4, 2), dtype=np.int32)
    # Integers compute in float32 (documented).
    case("matmul.i32", "matmul", [ai, bi], mm, "EXACT", "EXACT", F32)
    case("matmul.f16", "matmul", [a.astype(np.float16), b.astype(np.float16)], mm, "HALF", "HALF", np.float16,
         v0="T", v1="T")


# ------------------------------------------------------------------------------------
# Fused chains (fusion is on by default; CI also runs with LAZULI_NO_FUSION=1).

def add_chains():
    a = rng.uniform(-2, 2, (4, 16)).astype(F32)
    b = rng.uniform(-2, 2, (16,)).astype(F32)
    c = rng.uniform(-2, 2, (4, 1)).astype(F32)
    a[0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    case("chain.tanh_exp", "chain_tanh_exp", [a, b, c], lambda x, y, z: np.tanh(np.exp(f64(x) * y + z) * 0.5),
         "TRANS", "TRANS", F32)
    # (y + b) - b in f32, step by step: no algebraic simplification, NaN/inf kept.
    y = rng.uniform(-1e8, 1e8, (4, 16)).astype(F32)
    y[0, :6] = [np.nan, np.inf, -np.inf, 1e-3, -0.0, 3e38]
    bb = np.array([1e8, np.inf, -np.inf, 0.5, 0.0, 3e38, 1.0, -1e8] * 2, F32)
    case("chain.add_sub", "chain_add_sub", [y, bb], lambda x, z: (x + z) - z, "EXACT", "EXACT", F32)
    # a*b + c must round twice (NumPy does not fuse the multiply-add).
    m1 = rng.uniform(-1, 1, (4, 16)).astype(F32)
    m2 = rng.uniform(-1, 1, (4, 16)).astype(F32)
    m3 = rng.uniform(-1, 1, (4, 16)).astype(F32)
    case("chain.mul_add", "chain_mul_add", [m1, m2, m3], lambda x, y, z: x * y + z, "EXACT", "EXACT", F32)
    # A reduction fed by elementwise work and feeding more: sum(exp(x) * 2, axis 1) - x[:, 0].
    case("chain.reduce", "chain_reduce", [a], lambda x: np.sum(np.exp(f64(x)) * 2, axis=1) - f64(x)[:, 0],
         "RED", "RED", F32)
    # sqrt(relu(x)) * sign(x) + where(isnan(x), 1, 0): predicates inside a fused kernel.
    case("chain.predicates", "chain_predicates", [a],
         lambda x: np.sqrt(np.maximum(f64(x), 0)) * np.sign(f64(x)) + np.where(np.isnan(x), 1.0, 0.0),
         "EXACT", "ULP4", F32)


def add_edges():
    """Corners: NaN through scans and arg-reductions, all -inf rows, 0 * inf in products
    and matmuls, reductions and scans longer than a GPU workgroup, integer pow that wraps,
    conversions and clip."""
    v = rng.uniform(-3, 3, (3, 9)).astype(F32)
    v[0, 4] = np.nan
    v[1, [2, 6]] = np.nan
    v[2, 3] = -0.0
    v[2, 5] = 0.0
    # argmin with NaN: NumPy gives the first NaN (as argmax does).
    case("edge.argmin.nan", "argmin", [v], lambda x: np.argmin(x, axis=1), "EXACT", "EXACT", np.uint32,
         axis="1", keepdims="0")
    case("edge.argmax.nan.a0", "argmax", [v], lambda x: np.argmax(x, axis=0), "EXACT", "EXACT", np.uint32,
         axis="0", keepdims="0")
    case("edge.cummax.nan", "cummax", [v], lambda x: np.maximum.accumulate(x, axis=1), "EXACT", "EXACT", F32,
         axis="1", reverse="0")
    case("edge.cummin.nan.rev", "cummin", [v], lambda x: np.flip(np.minimum.accumulate(np.flip(x, 1), axis=1), 1),
         "EXACT", "EXACT", F32, axis="1", reverse="1")
    # Rows of -inf: logsumexp -inf; softmax NaN (0/0) where the whole row is -inf.
    li = rng.uniform(-3, 3, (3, 6)).astype(F32)
    li[0, :] = -np.inf
    li[1, 2] = -np.inf
    li[2, 4] = np.inf
    case("edge.logsumexp.neginf", "logsumexp", [li], lambda x: lse64(x, (1,), False), "RED", "RED", F32,
         axes="1", keepdims="0")
    case("edge.softmax.neginf", "softmax", [li[:2]], lambda x: softmax64(x, (1,)), "RED", "RED", F32, axes="1")
    # prod with 0 * inf (NaN) and signed zeros.
    pz = np.array([[0.0, np.inf, 2.0], [-0.0, 3.0, 1.0], [-0.0, -0.0, -1.0], [np.nan, 0.0, 1.0]], F32)
    case("edge.prod.zero_inf", "prod", [pz], lambda x: np.prod(x, axis=1), "EXACT", "EXACT", F32, axes="1",
         keepdims="0")
    case("edge.sum.signed_zero", "sum", [pz[1:3]], lambda x: np.sum(x, axis=1), "EXACT", "EXACT", F32, axes="1",
         keepdims="0")
    # matmul with inf and NaN entries at odd shapes (0 * inf is NaN, as BLAS gives).
    ma = rng.uniform(-1, 1, (5, 37)).astype(F32)
    mb = rng.uniform(-1, 1, (37, 3)).astype(F32)
    ma[1, 7] = np.inf
    ma[3, 0] = np.nan
    mb[11, 2] = -np.inf
    mb[7, 1] = 0.0
    case("edge.matmul.inf_nan", "matmul", [ma, mb], lambda x, y: np.matmul(f64(x), f64(y)), "RED", "RED", F32)
    # Longer than a workgroup: sums, argmax and scans over 1000 and 513 elements.
    lg = rng.uniform(-1, 1, (3, 1000)).astype(F32)
    lg[1, 777] = 5.0
    lg[2, 999] = 5.0
    lg[2, 1] = 5.0
    case("edge.sum.long", "sum", [lg], lambda x: np.sum(f64(x), axis=1), "RED", "RED", F32, axes="1", keepdims="0")
    case("edge.sum.long.a0", "sum", [lg], lambda x: np.sum(f64(x), axis=0), "RED", "RED", F32, axes="0",
         keepdims="0")
    case("edge.argmax.long", "argmax", [lg], lambda x: np.argmax(x, axis=1), "EXACT", "EXACT", np.uint32,
         axis="1", keepdims="0")
    case("edge.max.long", "max", [lg], lambda x: np.max(x), "EXACT", "EXACT", F32, axes="all", keepdims="0")
    case("edge.cumsum.long", "cumsum", [lg[:, :513]], lambda x: np.cumsum(f64(x), axis=1), "RED", "RED", F32,
         axis="1", reverse="0")
    case("edge.softmax.long", "softmax", [lg], lambda x: softmax64(x, (1,)), "RED", "RED", F32, axes="1")
    ilg = rng.integers(-2**31, 2**31 - 1, (2, 700), dtype=np.int32)
    case("edge.sum.long.i32", "sum", [ilg], lambda x: np.sum(x, axis=1, dtype=np.int32), "EXACT", "EXACT", np.int32,
         axes="1", keepdims="0")
    case("edge.cumsum.long.i32", "cumsum", [ilg], lambda x: np.cumsum(x, axis=1, dtype=np.int32), "EXACT", "EXACT",
         np.int32, axis="1", reverse="0")
    # Integer pow past the range wraps, as NumPy's repeated multiplication does.
    pa = np.array([3, -3, 7, 2, 2, -2, 10, 46341, 65536, 1, -1, 0], np.int32)
    pb = np.array([25, 25, 13, 31, 32, 31, 10, 2, 2, 1000, 1001, 0], np.int32)
    case("edge.pow.i32.wrap", "pow", [pa, pb], np.power, "EXACT", "EXACT", np.int32)
    case("edge.pow.u32.wrap", "pow", [pa.astype(np.uint32)[:5], pb.astype(np.uint32)[:5]], np.power, "EXACT",
         "EXACT", np.uint32)
    # Rounding at ties and beyond 2^23, remainder and floor division at magnitudes apart.
    rt = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.49999997, 8388609.0, -8388609.0, 4194304.5, 1e30, -0.0, 3.5], F32)
    case("edge.round.ties", "round", [rt], np.round, "EXACT", "EXACT", F32)
    ra = np.array([1e30, -1e30, 1e-30, -1e-30, -1e-45, 1e-45, 5.0, -5.0, 1e10, 7.0, -0.0, 0.0], F32)
    rb = np.array([3.0, 3.0, 1e30, 1e30, 1.0, -1.0, 1e-30, 1e-30, 0.1, -0.0, 1e-20, -1e-20], F32)
    for op, ref in [("remainder", np.remainder), ("floor_divide", np.floor_divide)]:
        case(f"edge.{op}.scales", op, [ra, rb], ref, "EXACT", "ULP4" if op == "floor_divide" else "EXACT", F32)
    # var with ddof at or beyond the count (NaN or inf, as NumPy).
    vd = rng.uniform(-1, 1, (3, 2)).astype(F32)
    case("edge.var.ddof2", "var", [vd], lambda x: np.var(f64(x), axis=1, ddof=2), "RED", "RED", F32, axes="1",
         keepdims="0", ddof="2")
    case("edge.var.ddof3", "var", [vd], lambda x: np.var(f64(x), axis=1, ddof=3), "RED", "RED", F32, axes="1",
         keepdims="0", ddof="3")
    ic = np.array([[3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37]], np.int32)
    case("edge.cumprod.i32.wrap", "cumprod", [ic], lambda x: np.cumprod(x, axis=1, dtype=np.int32), "EXACT",
         "EXACT", np.int32, axis="1", reverse="0")

    # Conversions: float to integer truncates toward zero (in range; beyond it lazuli
    # saturates where NumPy is undefined), integer to float rounds to nearest even,
    # f32 to f16 rounds once, NaN is true.
    cf = np.array([0.0, -0.0, 1.5, -1.5, 2.5, -2.7, 1e9, -2e9, 123456.7, 0.9999999, -0.9999999, 65519.0,
                   65520.0, 1e-8, 6e-8, -3e-8, np.nan, np.inf], F32)
    case("edge.astype.f32_i32", "astype_i32", [cf[:12]], lambda x: x.astype(np.int32), "EXACT", "EXACT", np.int32)
    case("edge.astype.f32_u32", "astype_u32", [np.abs(cf[:10])], lambda x: x.astype(np.uint32), "EXACT", "EXACT",
         np.uint32)
    case("edge.astype.f32_f16", "astype_f16", [cf], lambda x: x.astype(np.float16), "EXACT", "EXACT", np.float16)
    case("edge.astype.f32_bool", "astype_bool", [cf], lambda x: x.astype(bool), "EXACT", "EXACT", bool)
    ci = np.array([0, 1, -1, 16777217, -16777217, 16777219, 2**31 - 1, -2**31, 33554435], np.int32)
    case("edge.astype.i32_f32", "astype_f32", [ci], lambda x: x.astype(F32), "EXACT", "EXACT", F32)
    cu = np.array([0, 1, 16777217, 2**32 - 1, 2**31 + 129], np.uint32)
    case("edge.astype.u32_f32", "astype_f32", [cu], lambda x: x.astype(F32), "EXACT", "EXACT", F32)
    # f16 statistics accumulate in f32 (documented) and round once.
    h = rng.uniform(-60, 60, (4, 300)).astype(np.float16)
    case("edge.mean.f16", "mean", [h], lambda x: np.mean(f64(x), axis=1), "HALF", "HALF", np.float16, axes="1",
         keepdims="0")
    case("edge.var.f16", "var", [h], lambda x: np.var(f64(x), axis=1), "HALF", "HALF", np.float16, axes="1",
         keepdims="0", ddof="0")


def main():
    add_unary()
    add_binary()
    add_views()
    add_reductions()
    add_matmul()
    add_chains()
    add_edges()
    os.makedirs(OUT, exist_ok=True)
    np.savez_compressed(os.path.join(OUT, "cases.npz"), **arrays)
    with open(os.path.join(OUT, "cases.txt"), "w") as f:
        f.write("# Written by tests/suite/numpy_diff_cases.py; see there. "
                "NAME OP CPU_TOL GPU_TOL INPUTS [KEY=VALUE...]\n")
        f.write("\n".join(lines) + "\n")
    print(f"{len(lines)} cases, {len(arrays)} arrays")


if __name__ == "__main__":
    main()
