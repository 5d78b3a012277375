// ---- types_bool.wgsl: helpers for bool, stored as u32 0/1 (T = A = u32). ----
// Arithmetic on bools saturates like logic: add/max = or, mul/min = and, sub = xor.
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
    return select(0u, 1u, f32_truthy(x));
}

fn t_from_i32(x: i32) -> T {
    return select(0u, 1u, x != 0);
}

fn t_from_u32(x: u32) -> T {
    return select(0u, 1u, x != 0u);
}

fn t_from_bool(x: bool) -> T {
    return select(0u, 1u, x);
}

fn t_truthy(x: T) -> bool {
    return x != 0u;
}

fn unary_t(op: u32, x: T) -> T {
    switch op {
        case 23u: { return 1u - x; }
        default: { return x; }
    }
}

// IsNan (21), IsInf (22): never for integers; LogicalNot (23) into bool.
fn unary_pred_t(op: u32, x: T) -> bool {
    return op == 23u && !t_truthy(x);
}

fn binary_t(op: u32, a: T, b: T) -> T {
    switch op {
        case 0u, 7u: { return a | b; }
        case 1u: { return a ^ b; }
        case 2u, 8u: { return a & b; }
        case 3u, 6u: { return a & b; }
        case 4u: { return a | (1u - b); }
        case 5u: { return 0u; }
        default: { return a; }
    }
}

fn scatter_add_t(a: T, b: T) -> T {
    return a | b;
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
        case 0u, 2u: { return a | b; }
        default: { return a & b; }
    }
}

fn acc_identity(op: u32) -> A {
    switch op {
        case 0u, 2u: { return 0u; }
        default: { return 1u; }
    }
}

fn arg_better(op: u32, cand: T, best: T) -> bool {
    if op == 0u { return cand > best; }
    return cand < best;
}
