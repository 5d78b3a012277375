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
        case 0u: { return 0u - x; }
        case 2u: { return min(x, 1u); }
        case 3u: { return x * x; }
        case 23u: { return select(0u, 1u, x == 0u); }
        default: { return x; }
    }
}

// IsNan (21), IsInf (22): never for integers; LogicalNot (23) into bool.
fn unary_pred_t(op: u32, x: T) -> bool {
    return op == 23u && !t_truthy(x);
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
        case 0u: { return a + b; }
        case 1u: { return a - b; }
        case 2u: { return a * b; }
        case 3u, 6u: {
            if b == 0u { return 0u; }
            return a / b;
        }
        case 4u: { return pow_u32(a, b); }
        case 5u: {
            if b == 0u { return 0u; }
            return a % b;
        }
        case 7u: { return max(a, b); }
        case 8u: { return min(a, b); }
        default: { return a; }
    }
}

// Scatter-add saturates: the host adds in f64 and casts back with `as`.
fn scatter_add_t(a: T, b: T) -> T {
    let s = a + b;
    if s < a { return 0xffffffffu; }
    return s;
}

fn compare_t(op: u32, a: T, b: T) -> bool {
    switch op {
        case 9u: { return a == b; }
        case 10u: { return a != b; }
        case 11u: { return a < b; }
        case 12u: { return a <= b; }
        case 13u: { return a > b; }
        case 14u: { return a >= b; }
        case 15u: { return a != 0u && b != 0u; }
        case 16u: { return a != 0u || b != 0u; }
        default: { return (a != 0u) != (b != 0u); }
    }
}

fn acc_op(op: u32, a: A, b: A) -> A {
    switch op {
        case 0u: { return a + b; }
        case 1u: { return a * b; }
        case 2u: { return max(a, b); }
        default: { return min(a, b); }
    }
}

fn acc_identity(op: u32) -> A {
    switch op {
        case 0u: { return 0u; }
        case 1u: { return 1u; }
        case 2u: { return 0u; }
        default: { return 0xffffffffu; }
    }
}

fn arg_better(op: u32, cand: T, best: T) -> bool {
    if op == 0u { return cand > best; }
    return cand < best;
}
