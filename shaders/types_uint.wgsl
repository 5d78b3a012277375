// ---- types_uint.wgsl: helpers for T = u32 (A = u32). Arithmetic wraps. ----
const T_IS_FLOAT: bool = false;

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
    return f32_to_u32(x);
}

fn t_from_i32(x: i32) -> T {
    return bitcast<u32>(x);
}

fn t_from_u32(x: u32) -> T {
    return x;
}

fn t_from_bool(x: bool) -> T {
    return select(0u, 1u, x);
}

fn t_truthy(x: T) -> bool {
    return x != 0u;
}

fn unary_t(op: u32, x: T) -> T {
    switch op {
        case UNARY_NEG: { return 0u - x; }
        case UNARY_SIGN: { return min(x, 1u); }
        case UNARY_SQUARE: { return x * x; }
        default: { return POISON_U32; }
    }
}

// No predicate is defined on integers (isnan/isinf never reach here; logical_not takes bool).
fn unary_pred_t(op: u32, x: T) -> u32 {
    return POISON_U32;
}

fn pow_u32(a: u32, b: u32) -> u32 {
    var base = a;
    var e = b;
    var r = 1u;
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
        case BINARY_FLOOR_DIVIDE: {
            if b == 0u { return 0u; }
            return a / b;
        }
        case BINARY_POW: { return pow_u32(a, b); }
        case BINARY_REMAINDER: {
            if b == 0u { return 0u; }
            return a % b;
        }
        case BINARY_MAXIMUM: { return max(a, b); }
        case BINARY_MINIMUM: { return min(a, b); }
        default: { return POISON_U32; }
    }
}

// Scatter-add wraps, as the CPU's wrapping_add; WGSL's + wraps.
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
        default: { return POISON_U32; }
    }
}

fn acc_identity(op: u32) -> A {
    switch op {
        case REDUCE_SUM: { return 0u; }
        case REDUCE_PROD: { return 1u; }
        case REDUCE_MAX: { return 0u; }
        case REDUCE_MIN: { return 0xffffffffu; }
        default: { return POISON_U32; }
    }
}

fn arg_better(op: u32, cand: T, best: T) -> bool {
    switch op {
        case ARG_ARGMAX: { return cand > best; }
        case ARG_ARGMIN: { return cand < best; }
        default: { return false; }
    }
}
