// ---- types_float.wgsl: helpers for T = f32 or f16 (A = f32). Math runs in f32. ----
const T_IS_FLOAT: bool = true;

fn to_t(x: f32) -> T {
    // f32 -> f16 overflow is undefined in WGSL: saturate to infinity explicitly.
    if T_IS_F16 && abs(x) >= 65520.0 && !f32_is_nan(x) {
        return T(sign(x) * f32_inf());
    }
    return T(x);
}

fn from_t(x: T) -> f32 {
    return f32(x);
}

fn to_acc(x: T) -> A {
    return f32(x);
}

fn from_acc(x: A) -> T {
    return to_t(x);
}

fn is_nan_t(x: T) -> bool {
    return f32_is_nan(f32(x));
}

fn t_from_f32(x: f32) -> T {
    return to_t(x);
}

fn t_from_i32(x: i32) -> T {
    return to_t(f32(x));
}

fn t_from_u32(x: u32) -> T {
    return to_t(f32(x));
}

fn t_from_bool(x: bool) -> T {
    return T(select(0.0, 1.0, x));
}

fn t_truthy(x: T) -> bool {
    return f32_truthy(f32(x));
}

fn erf_f32(x: f32) -> f32 {
    let a = abs(x);
    if a < 0.5 {
        // Taylor series, 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1)).
        let x2 = x * x;
        var term = x;
        var sum = x;
        for (var n = 1; n < 12; n++) {
            term = -term * x2 / f32(n);
            sum += term / f32(2 * n + 1);
        }
        return sum * 1.1283791670955126;
    }
    if a >= 4.0 {
        return sign(x);
    }
    // erfc(a) = exp(-a^2) * R(a), Numerical Recipes' Chebyshev fit (rel. error < 1.2e-7).
    let t = 1.0 / (1.0 + 0.5 * a);
    let y = t * exp(-a * a - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
    return sign(x) * (1.0 - y);
}

fn expm1_f32(x: f32) -> f32 {
    // Kahan: exact when exp and log are faithful.
    let u = exp(x);
    if u == 1.0 {
        return x;
    }
    let um1 = u - 1.0;
    if um1 == -1.0 {
        return -1.0;
    }
    if f32_is_inf(u) {
        return u;
    }
    return um1 * x / log(u);
}

fn log_f32(x: f32) -> f32 {
    // Driver log is undefined at and below zero.
    if x < 0.0 || f32_is_nan(x) {
        return f32_nan();
    }
    if x == 0.0 {
        return -f32_inf();
    }
    return log(x);
}

fn log1p_f32(x: f32) -> f32 {
    let u = 1.0 + x;
    if u == 1.0 {
        return x;
    }
    if f32_is_inf(u) || f32_is_nan(u) {
        return log_f32(u);
    }
    return log_f32(u) * x / (u - 1.0);
}

fn sqrt_f32(x: f32) -> f32 {
    if x < 0.0 {
        return f32_nan();
    }
    return sqrt(x);
}

// Inverse error function: Giles' single-precision approximation ("Approximating the erfinv
// function", GPU Computing Gems Jade, 2011); the CPU refines the same start to f64.
fn erfinv_f32(x: f32) -> f32 {
    let a = abs(x);
    if f32_is_nan(x) || a > 1.0 { return f32_nan(); }
    if a == 1.0 { return x * f32_inf(); }
    var w = -log((1.0 - a) * (1.0 + a));
    var p: f32;
    if w < 5.0 {
        w = w - 2.5;
        p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w;
        p = -3.5233877e-06 + p * w;
        p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w;
        p = -0.00125372503 + p * w;
        p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w;
        p = 1.50140941 + p * w;
    } else {
        w = sqrt(w) - 3.0;
        p = -0.000200214257;
        p = 0.000100950558 + p * w;
        p = 0.00134934322 + p * w;
        p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w;
        p = -0.0076224613 + p * w;
        p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w;
        p = 2.83297682 + p * w;
    }
    return p * x;
}

// atan2 with C99's signed zeros and infinities, which WGSL's builtin leaves undefined.
fn atan2_f32(y: f32, x: f32) -> f32 {
    if f32_is_nan(x) || f32_is_nan(y) { return f32_nan(); }
    let pi = 3.14159265358979;
    if f32_is_inf(x) && f32_is_inf(y) {
        let q = select(0.25 * pi, 0.75 * pi, x < 0.0);
        return select(q, -q, y < 0.0);
    }
    if y == 0.0 {
        // sign(y) * (0 or pi): x < 0 or x = -0 gives pi.
        let neg_x = x < 0.0 || (x == 0.0 && (bitcast<u32>(x) & 0x80000000u) != 0u);
        let r = select(0.0, pi, neg_x);
        return select(r, -r, (bitcast<u32>(y) & 0x80000000u) != 0u);
    }
    if x == 0.0 || f32_is_inf(y) { return select(0.5 * pi, -0.5 * pi, y < 0.0); }
    if f32_is_inf(x) {
        let r = select(0.0, pi, x < 0.0);
        return select(r, -r, y < 0.0);
    }
    return atan2(y, x);
}

fn unary_f32(op: u32, x: f32) -> f32 {
    switch op {
        case UNARY_NEG: { return -x; }
        case UNARY_ABS: { return abs(x); }
        case UNARY_SIGN: {
            if f32_is_nan(x) || x == 0.0 { return x; }
            return sign(x);
        }
        case UNARY_SQUARE: { return x * x; }
        case UNARY_FLOOR: { return floor(x); }
        case UNARY_CEIL: { return ceil(x); }
        case UNARY_ROUND: { return round(x); }
        case UNARY_EXP: { return exp(x); }
        case UNARY_EXPM1: { return expm1_f32(x); }
        case UNARY_LOG: { return log_f32(x); }
        case UNARY_LOG1P: { return log1p_f32(x); }
        case UNARY_LOG2: {
            let l = log_f32(x);
            if f32_is_nan(l) || f32_is_inf(l) { return l; }
            return log2(x);
        }
        case UNARY_SQRT: { return sqrt_f32(x); }
        case UNARY_RSQRT: {
            if x < 0.0 { return f32_nan(); }
            // sqrt(-0) is -0, so rsqrt(-0) is -inf.
            if x == 0.0 { return 1.0 / x; }
            return 1.0 / sqrt(x);
        }
        case UNARY_RECIPROCAL: { return 1.0 / x; }
        case UNARY_SIN: { return sin(x); }
        case UNARY_COS: { return cos(x); }
        case UNARY_TAN: { return tan(x); }
        case UNARY_TANH: {
            if f32_is_nan(x) { return x; }
            return tanh(clamp(x, -15.0, 15.0));
        }
        case UNARY_SIGMOID: {
            // Split at 0 so exp never overflows.
            if x >= 0.0 { return 1.0 / (1.0 + exp(-x)); }
            let e = exp(x);
            return e / (1.0 + e);
        }
        case UNARY_ERF: { return erf_f32(x); }
        case UNARY_ERFINV: { return erfinv_f32(x); }
        // An op code without a case: a NaN that cannot pass for a result.
        default: { return f32_nan(); }
    }
}

fn unary_t(op: u32, x: T) -> T {
    return to_t(unary_f32(op, f32(x)));
}

// Predicates of floats, into bool (0/1).
fn unary_pred_t(op: u32, x: T) -> u32 {
    switch op {
        case UNARY_ISNAN: { return select(0u, 1u, f32_is_nan(f32(x))); }
        case UNARY_ISINF: { return select(0u, 1u, f32_is_inf(f32(x))); }
        default: { return POISON_U32; }
    }
}

fn is_int_f32(y: f32) -> bool {
    return floor(y) == y && !f32_is_inf(y);
}

fn pow_f32(x: f32, y: f32) -> f32 {
    if y == 0.0 || x == 1.0 {
        return 1.0;
    }
    if f32_is_nan(x) || f32_is_nan(y) {
        return f32_nan();
    }
    let ax = abs(x);
    var r: f32;
    if ax == 0.0 {
        r = select(0.0, f32_inf(), y < 0.0);
    } else if f32_is_inf(ax) {
        r = select(f32_inf(), 0.0, y < 0.0);
    } else if f32_is_inf(y) {
        if ax == 1.0 { return 1.0; }
        r = select(0.0, f32_inf(), (ax > 1.0) == (y > 0.0));
    } else {
        r = exp2(y * log2(ax));
    }
    if x < 0.0 || (x == 0.0 && (bitcast<u32>(x) & 0x80000000u) != 0u) {
        if !is_int_f32(y) {
            if ax == 0.0 || f32_is_inf(ax) { return r; }
            return f32_nan();
        }
        // Odd integer exponents keep the sign.
        let half = y * 0.5;
        if floor(half) != half {
            return -r;
        }
    }
    return r;
}

// Exact fmod on the bits (musl's fmodf): integer long division of the significands, so
// no float rounding (or driver reassociation) can creep in. Subnormals are normalised.
fn fmod_f32(x: f32, y: f32) -> f32 {
    let uxi0 = bitcast<u32>(x);
    var uyi = bitcast<u32>(y);
    var ex = i32((uxi0 >> 23u) & 0xffu);
    var ey = i32((uyi >> 23u) & 0xffu);
    let sx = uxi0 & 0x80000000u;
    var uxi = uxi0;
    if (uyi << 1u) == 0u || f32_is_nan(y) || ex == 0xff {
        return f32_nan();
    }
    if (uxi << 1u) <= (uyi << 1u) {
        if (uxi << 1u) == (uyi << 1u) { return bitcast<f32>(sx); }
        return x;
    }
    if ex == 0 {
        var i = uxi << 9u;
        while (i >> 31u) == 0u { ex -= 1; i = i << 1u; }
        uxi = uxi << u32(-ex + 1);
    } else {
        uxi = (uxi & (0xffffffffu >> 9u)) | (1u << 23u);
    }
    if ey == 0 {
        var i = uyi << 9u;
        while (i >> 31u) == 0u { ey -= 1; i = i << 1u; }
        uyi = uyi << u32(-ey + 1);
    } else {
        uyi = (uyi & (0xffffffffu >> 9u)) | (1u << 23u);
    }
    while ex > ey {
        let i = uxi - uyi;
        if (i >> 31u) == 0u {
            if i == 0u { return bitcast<f32>(sx); }
            uxi = i;
        }
        uxi = uxi << 1u;
        ex -= 1;
    }
    let i = uxi - uyi;
    if (i >> 31u) == 0u {
        if i == 0u { return bitcast<f32>(sx); }
        uxi = i;
    }
    while (uxi >> 23u) == 0u { uxi = uxi << 1u; ex -= 1; }
    if ex > 0 {
        uxi = (uxi - (1u << 23u)) | (u32(ex) << 23u);
    } else {
        uxi = uxi >> u32(-ex + 1);
    }
    return bitcast<f32>(uxi | sx);
}

fn rem_f32(a: f32, b: f32) -> f32 {
    // Sign follows the divisor (NumPy remainder).
    var r = fmod_f32(a, b);
    if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
        r += b;
    }
    return r;
}

fn max_f32(a: f32, b: f32) -> f32 {
    if f32_is_nan(a) { return a; }
    if f32_is_nan(b) { return b; }
    return select(b, a, a > b);
}

fn min_f32(a: f32, b: f32) -> f32 {
    if f32_is_nan(a) { return a; }
    if f32_is_nan(b) { return b; }
    return select(b, a, a < b);
}

fn binary_f32(op: u32, a: f32, b: f32) -> f32 {
    switch op {
        case BINARY_ADD: { return a + b; }
        case BINARY_SUB: { return a - b; }
        case BINARY_MUL: { return a * b; }
        case BINARY_DIV: { return a / b; }
        case BINARY_POW: { return pow_f32(a, b); }
        case BINARY_REMAINDER: { return rem_f32(a, b); }
        case BINARY_FLOOR_DIVIDE: { return floor(a / b); }
        case BINARY_MAXIMUM: { return max_f32(a, b); }
        case BINARY_MINIMUM: { return min_f32(a, b); }
        case BINARY_ATAN2: { return atan2_f32(a, b); }
        default: { return f32_nan(); }
    }
}

fn binary_t(op: u32, a: T, b: T) -> T {
    return to_t(binary_f32(op, f32(a), f32(b)));
}

// Comparisons, into bool (0/1), in f32 (exact for f16).
fn compare_t(op: u32, x: T, y: T) -> u32 {
    let a = f32(x);
    let b = f32(y);
    return compare_from(op, (a < b), (a == b), (a > b));
}

// Scatter-add: the host adds in f64 and rounds once, as one f32 add then rounding does.
fn scatter_add_t(a: T, b: T) -> T {
    return to_t(f32(a) + f32(b));
}

// Reductions on the accumulator.
fn acc_op(op: u32, a: A, b: A) -> A {
    switch op {
        case REDUCE_SUM: { return a + b; }
        case REDUCE_PROD: { return a * b; }
        case REDUCE_MAX: { return max_f32(a, b); }
        case REDUCE_MIN: { return min_f32(a, b); }
        default: { return f32_nan(); }
    }
}

fn acc_identity(op: u32) -> A {
    switch op {
        case REDUCE_SUM: { return 0.0; }
        case REDUCE_PROD: { return 1.0; }
        case REDUCE_MAX: { return -f32_inf(); }
        case REDUCE_MIN: { return f32_inf(); }
        default: { return f32_nan(); }
    }
}

// Arg-reductions: is `cand` strictly better than `best`? (NaN wins, the first NaN stays;
// an unknown op never moves off the first element.)
fn arg_better(op: u32, cand: T, best: T) -> bool {
    let c = f32(cand);
    let b = f32(best);
    if f32_is_nan(b) { return false; }
    if f32_is_nan(c) { return true; }
    switch op {
        case ARG_ARGMAX: { return c > b; }
        case ARG_ARGMIN: { return c < b; }
        default: { return false; }
    }
}
