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
        // Taylor series, 2/sqrt(pi) * x * sum (-1)^n x^(2n) / (n! (2n+1)): x multiplies
        // last so that erf(-0) is -0 (summing from x gave -0 + +0 = +0).
        let x2 = x * x;
        var term = 1.0;
        var sum = 1.0;
        for (var n = 1; n < 12; n++) {
            term = -term * x2 / f32(n);
            sum += term / f32(2 * n + 1);
        }
        return x * sum * 1.1283791670955126;
    }
    if a >= 4.0 {
        return sign(x);
    }
    // erfc(a) = exp(-a^2) * R(a), Numerical Recipes' Chebyshev fit (rel. error < 1.2e-7).
    let t = 1.0 / (1.0 + 0.5 * a);
    let y = t * exp(-a * a - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
    return sign(x) * (1.0 - y);
}

// expm1 near 0 from its Taylor series (|x| < 1/2: terms to x^10, relative error below
// 1e-9), not Kahan's u - 1 scaled by x / log(u): that needs a log accurate near 1, and
// Vulkan allows an absolute 2^-21 there (lavapipe gave expm1(-1e-30) = -6e-8). Beyond,
// exp(x) - 1 loses at most two bits.
fn expm1_f32(x: f32) -> f32 {
    // ±0 as is: the series below gives -0 + +0 = +0 at -0.
    if x == 0.0 {
        return x;
    }
    if abs(x) < 0.5 {
        var p = 1.0 / 39916800.0;
        p = p * x + 1.0 / 3628800.0;
        p = p * x + 1.0 / 362880.0;
        p = p * x + 1.0 / 40320.0;
        p = p * x + 1.0 / 5040.0;
        p = p * x + 1.0 / 720.0;
        p = p * x + 1.0 / 120.0;
        p = p * x + 1.0 / 24.0;
        p = p * x + 1.0 / 6.0;
        p = p * x + 0.5;
        return x + x * (x * p);
    }
    let u = exp(x);
    if f32_is_inf(u) || f32_is_nan(u) {
        return u;
    }
    return u - 1.0;
}

// Special cases of log and log2, decided on the bits (a flushing driver would see a
// subnormal as zero): -inf at ±0, NaN below zero and for NaN, +inf at +inf.
fn log_special(b: u32) -> f32 {
    if (b & 0x7fffffffu) == 0u { return -f32_inf(); }
    if b > 0x7f800000u { return f32_nan(); }
    return f32_inf();
}

fn log_is_special(b: u32) -> bool {
    return (b & 0x7fffffffu) == 0u || b >= 0x7f800000u;
}

// log(1 + x) for -0.5 <= x < 1, from 2 atanh(s), s = x / (2 + x) (|s| <= 1/3: terms to
// s^19): relatively accurate where the driver's log is only absolutely accurate (WGSL
// allows 2^-21 in [0.5, 2], so log(0.99999994) came out 73% off on lavapipe).
fn log1p_series(x: f32) -> f32 {
    let t = x / (2.0 + x);
    let z = t * t;
    var p = 1.0 / 19.0;
    p = p * z + 1.0 / 17.0;
    p = p * z + 1.0 / 15.0;
    p = p * z + 1.0 / 13.0;
    p = p * z + 1.0 / 11.0;
    p = p * z + 1.0 / 9.0;
    p = p * z + 1.0 / 7.0;
    p = p * z + 1.0 / 5.0;
    p = p * z + 1.0 / 3.0;
    return 2.0 * (t + t * (z * p));
}

// Whether log and log2 of `x` take log1p_series(x - 1): x in (0.5, 2), where x - 1 is
// exact (Sterbenz) and the driver's log only absolutely accurate. log(1) is exactly 0
// there (the series of 0), which pow(-1, y) relies on.
fn log_near_one(x: f32) -> bool {
    return x > 0.5 && x < 2.0;
}

fn log_f32(x: f32) -> f32 {
    // Driver log is undefined at and below zero, and drivers that flush denormals give
    // -inf or log(2^-126) for subnormals: those go through their integer significand
    // (exact in f32), log(m * 2^-149).
    let b = bitcast<u32>(x);
    if log_is_special(b) { return log_special(b); }
    if b < 0x00800000u { return log(f32(b)) - 103.27892990343185; }
    if log_near_one(x) { return log1p_series(x - 1.0); }
    return log(x);
}

fn log2_f32(x: f32) -> f32 {
    let b = bitcast<u32>(x);
    if log_is_special(b) { return log_special(b); }
    if b < 0x00800000u { return log2(f32(b)) - 149.0; }
    if log_near_one(x) { return log1p_series(x - 1.0) * 1.442695; }
    return log2(x);
}

// log1p near 0 from the series, for the same reason as expm1: the driver's log near 1 is
// only absolutely accurate. Beyond, Kahan's form, the ratio (near 1) taken first so
// log(u) * x cannot overflow (log1p(3e38) = 88.6).
fn log1p_f32(x: f32) -> f32 {
    if f32_is_nan(x) { return x; }
    // Below 2^-24, log1p(x) rounds to x; the series' x / (2 + x) would be subnormal
    // (flushed to 0 by some drivers) for x near the smallest normal.
    if abs(x) < 5.9604645e-8 { return x; }
    if abs(x) < 0.5 { return log1p_series(x); }
    let u = 1.0 + x;
    if f32_is_inf(u) || u <= 0.0 {
        return log_f32(u);
    }
    return log_f32(u) * (x / (u - 1.0));
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
// `v * 2^24` built from the bits, so a subnormal `v` survives a driver that flushes
// subnormal operands to zero.
fn scale_up_24(v: f32) -> f32 {
    let b = bitcast<u32>(v);
    if (b & 0x7f800000u) == 0u {
        let m = ldexp(f32(b & 0x7fffffu), -125);
        return select(m, -m, (b & 0x80000000u) != 0u);
    }
    return v * 16777216.0;
}

fn is_subnormal_f32(v: f32) -> bool {
    let b = bitcast<u32>(v);
    return (b & 0x7f800000u) == 0u && (b & 0x7fffffu) != 0u;
}

fn atan2_f32(y0: f32, x0: f32) -> f32 {
    if f32_is_nan(x0) || f32_is_nan(y0) { return f32_nan(); }
    // A subnormal operand would read as zero (atan2(1.2e-38, 1e-40) gave pi/2): scale
    // both by 2^24, which leaves the angle alone (an operand that overflows was so much
    // larger that the angle is its limit anyway).
    var y = y0;
    var x = x0;
    if is_subnormal_f32(y) || is_subnormal_f32(x) {
        y = scale_up_24(y);
        x = scale_up_24(x);
    }
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

// tanh without branches: both forms are computed for a = |x| and one selected, because
// arguments on both sides of 0.55 in one warp ran both branches of the former expm1 form
// (gelu's fused kernel on an H100 moved 2372 GB/s against the chain's 2796, BENCHMARKS.md
// session 15).
// - a < 0.55: a + a^3 P(a^2), the CPU's minimax coefficients (`TANH_P32` in
//   src/backend/cpu/math.rs); tiny arguments give x (a^3 underflows), ±0 keep their sign.
// - beyond: 1 - 2 / (e^2a + 1) <= 1/2 cancels at most one bit, and its limit is exactly 1
//   where e^2a overflows. NaN fails the comparison and stays NaN through this side.
fn tanh_f32(x: f32) -> f32 {
    let a = abs(x);
    let z = a * a;
    var p = -0.0062428494;
    p = p * z + 0.021050714;
    p = p * z - 0.053847548;
    p = p * z + 0.13332544;
    p = p * z - 0.33333316;
    let small = a + a * (z * p);
    let large = 1.0 - 2.0 / (exp(2.0 * a) + 1.0);
    return copysign_f32(select(large, small, a < 0.55), x);
}

// Bits of 2/pi, most significant first: enough for the largest f32 exponent plus a
// 128-bit window.
const TWO_OVER_PI = array<u32, 7>(0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u, 0xdb629599u,
                                  0x3c439041u, 0xfe5163abu);

// a * b as (lo, hi) 32-bit words (WGSL has no 64-bit integers).
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
    let al = a & 0xffffu;
    let ah = a >> 16u;
    let bl = b & 0xffffu;
    let bh = b >> 16u;
    let ll = al * bl;
    let lh = al * bh;
    let hl = ah * bl;
    let mid = (ll >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
    return vec2<u32>((mid << 16u) | (ll & 0xffffu), ah * bh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u));
}

// x mod pi/2 for finite |x| > pi/4 (Payne-Hanek): the 24-bit significand times a 128-bit
// window of 2/pi, exact in integers, leaves the quadrant (2 bits) and a 62-bit fraction;
// drivers' own reduction loses everything from about 2^31 up (sin gave exactly ±1).
// Returns (r, q) with r in [-pi/4, pi/4] and x = r + q * pi/2 (mod 2 pi), q in 0..3.
fn reduce_pio2(x: f32) -> vec2<f32> {
    let b = bitcast<u32>(x) & 0x7fffffffu;
    let m = (b & 0x7fffffu) | 0x800000u;
    // |x| = m * 2^s; words wholly above 2^2 (multiples of 4 quarter turns) are skipped.
    let s = i32(b >> 23u) - 150;
    let k0 = select(0, (s - 2) / 32, s >= 2);
    var w = TWO_OVER_PI;
    let l3 = mul_wide(m, w[k0 + 3]);
    let l2 = mul_wide(m, w[k0 + 2]);
    let l1 = mul_wide(m, w[k0 + 1]);
    let l0 = mul_wide(m, w[k0]);
    // The 152-bit product, least significant word first, carries propagated.
    var p: array<u32, 5>;
    p[0] = l3.x;
    p[1] = l3.y + l2.x;
    var c = select(0u, 1u, p[1] < l2.x);
    let t2 = l2.y + l1.x;
    p[2] = t2 + c;
    c = select(0u, 1u, t2 < l1.x || p[2] < t2);
    let t3 = l1.y + l0.x;
    p[3] = t3 + c;
    c = select(0u, 1u, t3 < l0.x || p[3] < t3);
    p[4] = l0.y + c;
    // The binary point sits `point` bits up; take 2 integer and 62 fraction bits.
    let point = 32 * (k0 + 4) - s;
    let low = u32(point - 62);
    let wi = low / 32u;
    let off = low % 32u;
    var lo = p[wi];
    var hi = p[wi + 1u];
    if off != 0u {
        lo = (lo >> off) | (hi << (32u - off));
        hi = (hi >> off) | (p[wi + 2u] << (32u - off));
    }
    var q = hi >> 30u;
    var fh = hi & 0x3fffffffu;
    var neg = false;
    if fh >= 0x20000000u {
        // Fraction >= 1/2: the next quadrant, minus (1 - fraction).
        q += 1u;
        neg = true;
        let borrow = select(1u, 0u, lo == 0u);
        lo = 0u - lo;
        fh = 0x40000000u - fh - borrow;
    }
    // The 62-bit fraction to f32: normalise, then one rounding.
    var f: f32;
    if fh != 0u {
        let z = countLeadingZeros(fh);
        let top = (fh << z) | (lo >> (32u - z));
        f = ldexp(f32(top), -30 - i32(z));
    } else if lo != 0u {
        let z = countLeadingZeros(lo);
        f = ldexp(f32(lo << z), -62 - i32(z));
    } else {
        f = 0.0;
    }
    let r = f * 1.5707963267948966;
    return vec2<f32>(select(r, -r, neg), f32(q & 3u));
}

// sin and cos on [-pi/4, pi/4] (Cephes' sinf/cosf polynomials).
fn sin_poly(r: f32) -> f32 {
    let z = r * r;
    return ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;
}

fn cos_poly(r: f32) -> f32 {
    let z = r * r;
    return ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z - 0.5 * z + 1.0;
}

// (sin |x|, cos |x|) from the reduced argument; NaN for inf and NaN.
fn sincos_abs(x: f32) -> vec2<f32> {
    let a = abs(x);
    if (bitcast<u32>(x) & 0x7fffffffu) >= 0x7f800000u { return vec2<f32>(f32_nan(), f32_nan()); }
    if a <= 0.7853981633974483 { return vec2<f32>(sin_poly(a), cos_poly(a)); }
    let rq = reduce_pio2(a);
    let sr = sin_poly(rq.x);
    let cr = cos_poly(rq.x);
    // Quadrants 0..3: (s, c), (c, -s), (-s, -c), (-c, s).
    let q = u32(rq.y);
    let v = select(vec2<f32>(sr, cr), vec2<f32>(cr, -sr), (q & 1u) != 0u);
    return select(v, -v, q >= 2u);
}

fn sin_f32(x: f32) -> f32 {
    // Odd: the sign of x (and of zero) carries over.
    let s = sincos_abs(x).x;
    return select(s, -s, x < 0.0 || (bitcast<u32>(x) == 0x80000000u));
}

fn cos_f32(x: f32) -> f32 {
    return sincos_abs(x).y;
}

fn tan_f32(x: f32) -> f32 {
    let sc = sincos_abs(x);
    let t = sc.x / sc.y;
    return select(t, -t, x < 0.0 || (bitcast<u32>(x) == 0x80000000u));
}

fn unary_f32(op: u32, x: f32) -> f32 {
    switch op {
        case UNARY_NEG: { return -x; }
        case UNARY_ABS: { return abs(x); }
        case UNARY_SIGN: {
            // On the bits: a flushing driver compares a subnormal equal to 0, and
            // returning x there gave the subnormal itself. Either zero gives +0, as NumPy.
            let b = bitcast<u32>(x);
            if f32_is_nan(x) { return x; }
            if (b & 0x7fffffffu) == 0u { return 0.0; }
            return select(1.0, -1.0, (b & 0x80000000u) != 0u);
        }
        case UNARY_SQUARE: { return x * x; }
        case UNARY_FLOOR: { return floor(x); }
        case UNARY_CEIL: { return ceil(x); }
        case UNARY_ROUND: { return round(x); }
        case UNARY_EXP: { return exp(x); }
        case UNARY_EXPM1: { return expm1_f32(x); }
        case UNARY_LOG: { return log_f32(x); }
        case UNARY_LOG1P: { return log1p_f32(x); }
        case UNARY_LOG2: { return log2_f32(x); }
        case UNARY_SQRT: { return sqrt_f32(x); }
        case UNARY_RSQRT: {
            if x < 0.0 { return f32_nan(); }
            // sqrt(-0) is -0, so rsqrt(-0) is -inf.
            if x == 0.0 { return 1.0 / x; }
            return 1.0 / sqrt(x);
        }
        case UNARY_RECIPROCAL: { return div_f32(1.0, x); }
        case UNARY_SIN: { return sin_f32(x); }
        case UNARY_COS: { return cos_f32(x); }
        case UNARY_TAN: { return tan_f32(x); }
        case UNARY_TANH: { return tanh_f32(x); }
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
    // Zero decided on the bits and the logarithm through log2_f32, so a subnormal base
    // is not flushed to zero by the driver (pow(1e-40, 0.5) is 1e-20, pow(1e-40, -1) inf).
    let zero = (bitcast<u32>(x) & 0x7fffffffu) == 0u;
    var r: f32;
    if zero {
        r = select(0.0, f32_inf(), y < 0.0);
    } else if f32_is_inf(ax) {
        r = select(f32_inf(), 0.0, y < 0.0);
    } else if f32_is_inf(y) {
        // C99: +inf for |x| > 1, +0 for |x| < 1 (reversed for -inf), 1 for x = -1; the
        // sign of x does not matter (an infinite y is an even integer).
        if ax == 1.0 { return 1.0; }
        return select(0.0, f32_inf(), (ax > 1.0) == (y > 0.0));
    } else {
        // log2_f32 is relatively accurate near 1, where a large exponent multiplies the
        // driver's absolute error: pow(0.99999899, 8388609) had come out 10% low on
        // lavapipe through the driver's log2.
        r = exp2(y * log2_f32(ax));
    }
    if (bitcast<u32>(x) & 0x80000000u) != 0u {
        if !is_int_f32(y) {
            if zero || f32_is_inf(ax) { return r; }
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

fn copysign_f32(m: f32, s: f32) -> f32 {
    return bitcast<f32>((bitcast<u32>(m) & 0x7fffffffu) | (bitcast<u32>(s) & 0x80000000u));
}

// x / y, right at the extremes on every driver. Some drivers compute x * (1 / y), and
// 1 / y flushes to zero for |y| > 2^126 (inf / 3e38 became NaN): both operands are
// scaled by 1/4 there (exact unless x is tiny, when the quotient underflows anyway).
// Subnormal divisors are scaled up by 2^24 (where the driver keeps denormals) so 1 / y
// does not overflow; an x that overflows then has an infinite quotient anyway.
fn div_f32(x: f32, y: f32) -> f32 {
    let ay = abs(y);
    var s = 1.0;
    if ay > 8.507059e37 && !f32_is_inf(y) {
        s = 0.25;
    } else if ay < 1.1754944e-38 && ay != 0.0 {
        s = 16777216.0;
    }
    return (x * s) / (y * s);
}

// NaN cases of fmod (x inf or NaN, y 0 or NaN), decided first on the bits: WGSL lets
// compilers assume no NaN, so `m != 0.0` on a NaN m may come out false.
fn fmod_is_nan(a: f32, b: f32) -> bool {
    return f32_is_nan(a) || f32_is_nan(b) || f32_is_inf(a) || b == 0.0;
}

fn rem_f32(a: f32, b: f32) -> f32 {
    // NumPy's npy_divmod: sign follows the divisor, from the exact fmod.
    if fmod_is_nan(a, b) { return f32_nan(); }
    // Below a divisor near the bottom of the normal range the fmod can be subnormal,
    // which a device that flushes subnormals loses before the divisor is added back
    // (NVIDIA: 13.602261543 rem -4.0110308e-38 gave -0, not -3.8577097e-38). fmod commutes
    // exactly with scaling both operands by 2^24 where the dividend leaves room.
    var s = 1.0;
    if abs(b) < 1.0e-30 && abs(a) < 1.0e30 { s = 16777216.0; }
    let bs = b * s;
    var r = fmod_f32(a * s, bs);
    if r != 0.0 {
        if (r < 0.0) != (bs < 0.0) { r += bs; }
    } else {
        r = copysign_f32(0.0, b);
    }
    return r / s;
}

// NumPy's floor_divide for floats (npy_divmod): from the exact fmod, so a quotient that
// rounds up (1 // 0.1 = 9, not 10) is corrected, with NumPy's NaNs and signed zeros.
fn floor_div_f32(a: f32, b: f32) -> f32 {
    if f32_is_nan(a) || f32_is_nan(b) { return f32_nan(); }
    if b == 0.0 {
        // a / ±0, with the sign of zero, made explicit.
        if a == 0.0 { return f32_nan(); }
        return copysign_f32(f32_inf(), bitcast<f32>(bitcast<u32>(a) ^ (bitcast<u32>(b) & 0x80000000u)));
    }
    if f32_is_inf(a) { return f32_nan(); }
    let m = fmod_f32(a, b);
    var d = div_f32(a - m, b);
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        d -= 1.0;
    }
    if d != 0.0 {
        var fl = floor(d);
        if d - fl > 0.5 { fl += 1.0; }
        return fl;
    }
    return copysign_f32(0.0, div_f32(a, b));
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
        case BINARY_DIV: { return div_f32(a, b); }
        case BINARY_POW: { return pow_f32(a, b); }
        case BINARY_REMAINDER: { return rem_f32(a, b); }
        case BINARY_FLOOR_DIVIDE: { return floor_div_f32(a, b); }
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
