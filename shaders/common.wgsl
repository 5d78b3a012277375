// ---- common.wgsl: helpers shared by every kernel family ----
// Threads per workgroup of the 1-D kernels. Large arrays use a 2-D grid of workgroups
// (x up to the per-dimension limit, then y), and flat_id rebuilds the element index.
const WG: u32 = 256u;

fn flat_id(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wid.y * nwg.x + wid.x) * WG + lid;
}

// What an op code without a case gives, for u32 and bool results: all ones, never the
// input. (Floats give NaN, i32 -1.)
const POISON_U32: u32 = 0xffffffffu;

// Non-finite values are made at run time from bit patterns: constant expressions may not
// be NaN or infinite in WGSL.
var<private> NAN_BITS: u32 = 0x7fc00000u;
var<private> INF_BITS: u32 = 0x7f800000u;

fn f32_nan() -> f32 {
    return bitcast<f32>(NAN_BITS);
}

fn f32_inf() -> f32 {
    return bitcast<f32>(INF_BITS);
}

// Bit tests, because `x != x` may be folded away by a fast-math compiler.
fn f32_is_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

fn f32_is_inf(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u;
}

// Rust `as` from f32: truncate toward zero, saturate, NaN to 0.
fn f32_to_i32(x: f32) -> i32 {
    if f32_is_nan(x) {
        return 0;
    }
    if x >= 2147483648.0 {
        return 2147483647;
    }
    if x <= -2147483648.0 {
        return bitcast<i32>(0x80000000u);
    }
    return i32(x);
}

fn f32_to_u32(x: f32) -> u32 {
    if f32_is_nan(x) || x <= 0.0 {
        return 0u;
    }
    if x >= 4294967296.0 {
        return 0xffffffffu;
    }
    return u32(x);
}

// A comparison from the three-way outcome of `a` against `b`; all three are false when
// unordered (NaN), so NaN compares unequal to everything. Shared by every dtype class.
// (Callers parenthesise `(a < b)`: a bare `<` in an argument list opens a WGSL template list.)
fn compare_from(op: u32, lt: bool, eq: bool, gt: bool) -> u32 {
    var r: bool;
    switch op {
        case BINARY_EQ: { r = eq; }
        case BINARY_NE: { r = !eq; }
        case BINARY_LT: { r = lt; }
        case BINARY_LE: { r = lt || eq; }
        case BINARY_GT: { r = gt; }
        case BINARY_GE: { r = gt || eq; }
        default: { return POISON_U32; }
    }
    return select(0u, 1u, r);
}

// True unless x is zero (NaN counts as true, as Rust's `v != 0.0`).
fn f32_truthy(x: f32) -> bool {
    return !(x == 0.0);
}

// Kernel parameters are one struct per family (binding 0, `P`), generated from
// src/backend/gpu/params.rs and appended to every shader.

// Strided kernels take rank <= MAX_RANK (generated): the element offset of flat index
// `flat` of `shape` walked with `strides` (in elements, 0 on broadcast axes).
fn strided_offset(flat: u32, rank: u32, shape_in: array<u32, MAX_RANK>, strides_in: array<i32, MAX_RANK>) -> i32 {
    // Locals, so the loop indexes memory rather than values.
    var shape = shape_in;
    var strides = strides_in;
    var rem = flat;
    var off = 0i;
    for (var k = i32(rank) - 1; k >= 0; k--) {
        let d = shape[k];
        let i = rem % d;
        rem = rem / d;
        off += i32(i) * strides[k];
    }
    return off;
}
