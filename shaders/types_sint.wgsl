// ---- types_sint.wgsl: helpers for T = i32 (A = i32). Arithmetic wraps. ----
const T_IS_FLOAT: bool = false;
const I32_MIN: i32 = -2147483647 - 1;

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
        case 0u: { return -x; }
        case 1u: { return abs(x); }
        case 2u: { return sign(x); }
        case 3u: { return x * x; }
        case 23u: { return select(0, 1, x == 0); }
        default: { return x; }
    }
}

// IsNan (21), IsInf (22): never for integers; LogicalNot (23) into bool.
fn unary_pred_t(op: u32, x: T) -> bool {
    return op == 23u && !t_truthy(x);
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
        case 0u: { return a + b; }
        case 1u: { return a - b; }
        case 2u: { return a * b; }
        case 4u: { return pow_i32(a, b); }
        case 5u: {
            if b == 0 || b == -1 { return 0; }
            var r = a % b;
            if r != 0 && ((r < 0) != (b < 0)) { r += b; }
            return r;
        }
        case 3u, 6u: {
            if b == 0 { return 0; }
            if b == -1 { return -a; }
            var q = a / b;
            if (a % b != 0) && ((a < 0) != (b < 0)) { q -= 1; }
            return q;
        }
        case 7u: { return max(a, b); }
        case 8u: { return min(a, b); }
        default: { return a; }
    }
}

// Scatter-add saturates: the host adds in f64 and casts back with `as`.
fn scatter_add_t(a: T, b: T) -> T {
    let s = a + b;
    if a > 0 && b > 0 && s < 0 { return 2147483647; }
    if a < 0 && b < 0 && s >= 0 { return I32_MIN; }
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
        case 15u: { return a != 0 && b != 0; }
        case 16u: { return a != 0 || b != 0; }
        default: { return (a != 0) != (b != 0); }
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
        case 0u: { return 0; }
        case 1u: { return 1; }
        case 2u: { return I32_MIN; }
        default: { return 2147483647; }
    }
}

fn arg_better(op: u32, cand: T, best: T) -> bool {
    if op == 0u { return cand > best; }
    return cand < best;
}
