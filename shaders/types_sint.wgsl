// ---- types_sint.wgsl: helpers for T = i32 (A = i32). Arithmetic wraps. ----
const T_IS_FLOAT: bool = false;
const I32_MIN: i32 = -2147483647 - 1;
// All ones: what an op code without a case gives (never the input).
const POISON_I32: i32 = -1;

fn to_acc(x: T) -> A {
    return x;
}

fn from_acc(x: A) -> T {
    return x;
}

fn is_nan_t(x: T) -> bool {
    return false;
}

fn t_from_f32(x: f32) -> T {
    return f32_to_i32(x);
}

fn t_from_i32(x: i32) -> T {
    return x;
}

fn t_from_u32(x: u32) -> T {
    return bitcast<i32>(x);
}

fn t_from_bool(x: bool) -> T {
    return select(0, 1, x);
}

fn t_truthy(x: T) -> bool {
    return x != 0;
}

fn unary_t(op: u32, x: T) -> T {
    switch op {
        case UNARY_NEG: { return -x; }
        case UNARY_ABS: { return abs(x); }
        case UNARY_SIGN: { return sign(x); }
        case UNARY_SQUARE: { return x * x; }
        default: { return POISON_I32; }
    }
}

// No predicate is defined on integers (isnan/isinf never reach here; logical_not takes bool).
fn unary_pred_t(op: u32, x: T) -> u32 {
    return POISON_U32;
}

// Wrapping power by squaring; negative exponents give 0 except for bases 1 and -1.
fn pow_i32(a: i32, b: i32) -> i32 {
    if b < 0 {
        if a == 1 { return 1; }
        if a == -1 { return select(1, -1, (b & 1) != 0); }
        return 0;
    }
    var base = a;
    var e = u32(b);
    var r = 1i;
    loop {
        if e == 0u { break; }
        if (e & 1u) != 0u { r = r * base; }
        base = base * base;
        e = e >> 1u;
    }
    return r;
}

fn binary_t(op: u32, a: T, b: T) -> T {
    switch op {
        case BINARY_ADD: { return a + b; }
        case BINARY_SUB: { return a - b; }
        case BINARY_MUL: { return a * b; }
        case BINARY_POW: { return pow_i32(a, b); }
        case BINARY_REMAINDER: {
            if b == 0 || b == -1 { return 0; }
            var r = a % b;
            if r != 0 && ((r < 0) != (b < 0)) { r += b; }
            return r;
        }
        case BINARY_FLOOR_DIVIDE: {
            if b == 0 { return 0; }
            if b == -1 { return -a; }
            var q = a / b;
            if (a % b != 0) && ((a < 0) != (b < 0)) { q -= 1; }
            return q;
        }
        case BINARY_MAXIMUM: { return max(a, b); }
        case BINARY_MINIMUM: { return min(a, b); }
        default: { return POISON_I32; }
    }
}

// Scatter-add wraps (two's complement), as the CPU's wrapping_add; WGSL's + wraps.
fn scatter_add_t(a: T, b: T) -> T {
    return a + b;
}

fn compare_t(op: u32, a: T, b: T) -> u32 {
    return compare_from(op, (a < b), (a == b), (a > b));
}

fn acc_op(op: u32, a: A, b: A) -> A {
    switch op {
        case REDUCE_SUM: { return a + b; }
        case REDUCE_PROD: { return a * b; }
        case REDUCE_MAX: { return max(a, b); }
        case REDUCE_MIN: { return min(a, b); }
        default: { return POISON_I32; }
    }
}

fn acc_identity(op: u32) -> A {
    switch op {
        case REDUCE_SUM: { return 0; }
        case REDUCE_PROD: { return 1; }
        case REDUCE_MAX: { return I32_MIN; }
        case REDUCE_MIN: { return 2147483647; }
        default: { return POISON_I32; }
    }
}

fn arg_better(op: u32, cand: T, best: T) -> bool {
    switch op {
        case ARG_ARGMAX: { return cand > best; }
        case ARG_ARGMIN: { return cand < best; }
        default: { return false; }
    }
}
