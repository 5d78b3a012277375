// ---- types_bool.wgsl: helpers for bool, stored as u32 0/1 (T = A = u32). ----
// Reductions on bools are logic: sum/max = or, prod/min = and.
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
        case UNARY_LOGICAL_NOT: { return 1u - x; }
        default: { return POISON_U32; }
    }
}

// Bool predicates of bool are `unary_t` (logical_not); nothing reaches here.
fn unary_pred_t(op: u32, x: T) -> u32 {
    return POISON_U32;
}

// No arithmetic is defined on bool (the op layer computes it in int32).
fn binary_t(op: u32, a: T, b: T) -> T {
    return POISON_U32;
}

fn scatter_add_t(a: T, b: T) -> T {
    return a | b;
}

fn compare_t(op: u32, a: T, b: T) -> u32 {
    switch op {
        case BINARY_LOGICAL_AND: { return select(0u, 1u, a != 0u && b != 0u); }
        case BINARY_LOGICAL_OR: { return select(0u, 1u, a != 0u || b != 0u); }
        case BINARY_LOGICAL_XOR: { return select(0u, 1u, (a != 0u) != (b != 0u)); }
        default: { return compare_from(op, (a < b), (a == b), (a > b)); }
    }
}

fn acc_op(op: u32, a: A, b: A) -> A {
    switch op {
        case REDUCE_SUM, REDUCE_MAX: { return a | b; }
        case REDUCE_PROD, REDUCE_MIN: { return a & b; }
        default: { return POISON_U32; }
    }
}

fn acc_identity(op: u32) -> A {
    switch op {
        case REDUCE_SUM, REDUCE_MAX: { return 0u; }
        case REDUCE_PROD, REDUCE_MIN: { return 1u; }
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
