//! f32 transcendental functions written to vectorise: straight-line arithmetic (no
//! branches, no tables, no calls), so a loop over them compiles to vector code at the
//! width [`super::simd::vectorize`] picks (8 f64 or 16 f32 lanes with AVX-512).
//!
//! `exp` and `tanh` compute in f32, 16 lanes per vector instead of 8 (through f64 the
//! exp row ran at 0.7x NumPy and `tanh(exp(a*b+c)*0.5)` at 0.63x); their docs say how they
//! stay within 1 ulp. Every other function widens its f32 argument to f64, evaluates with
//! relative error below 2^-29 (the ones built on `exp64`: expm1, sigmoid, pow) or 2^-44
//! (the log family, sin, cos), and rounds once to f32. The result is therefore within
//! 0.5 + 2^-5 ulp of the exact value, subnormal results included: the f64 intermediate
//! has the range, and the one final rounding makes the subnormal or the overflow to
//! infinity. `tests/suite/cpu_math.rs` checks the 1-ulp bound of every function over the
//! whole f32 range. Plain `*` and `+` (never `mul_add`) keep results identical with and
//! without FMA hardware.
//!
//! Arguments outside a function's fast range (huge |x| for sin/cos, non-positive or
//! non-finite bases for pow) give a wrong vector result that the caller replaces with the
//! scalar libm value: [`sin_cos_fast_range`] and [`pow_fast_range`] say which.

const SHIFTER: f64 = 6755399441055744.0; // 1.5 * 2^52: adding it rounds to an integer.
const INV_LN2: f64 = std::f64::consts::LOG2_E;
// ln 2 split (fdlibm's bit patterns): `n * LN2_HI` is exact for |n| < 2^11.
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
const LN2: f64 = std::f64::consts::LN_2;

/// Horner's scheme, highest coefficient first.
#[inline(always)]
fn horner<const N: usize>(x: f64, c: &[f64; N]) -> f64 {
    let mut p = c[0];
    for &k in &c[1..] {
        p = p * x + k;
    }
    p
}

/// 1/k! for k = 8 down to 2.
const INV_FACT_8_2: [f64; 7] = [1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5];

/// `e^y`, y clamped to [-300, 300] (beyond it an f32 result is 0 or infinity anyway);
/// NaN stays NaN. `y = n ln2 + r` with |r| <= ln2/2, `e^r` by its Taylor series to r^8
/// (truncation below 2^-31 relative: enough for one f32 rounding, and a third fewer
/// terms than the 2^-52 of r^12, which made the exp row 21% slower on 2 cores), scaled
/// by 2^n built in the exponent bits.
#[inline(always)]
pub(crate) fn exp64(y: f64) -> f64 {
    let y = y.clamp(-300.0, 300.0);
    let big = y * INV_LN2 + SHIFTER;
    let n = big - SHIFTER;
    let r = (y - n * LN2_HI) - n * LN2_LO;
    let e = 1.0 + r * (1.0 + r * horner(r, &INV_FACT_8_2));
    // The low mantissa bits of `big` hold n (two's complement mod 2^51): (n + 1023) << 52
    // is the biased exponent of 2^n, 0 < n + 1023 < 2^11 for |n| <= 433.
    let scale = f64::from_bits(big.to_bits().wrapping_add(1023) << 52);
    e * scale
}

/// `e^y - 1` without cancellation: Taylor to y^10 for |y| < 1/2 (truncation below
/// 2^-35 relative), `exp64(y) - 1` beyond, where the result is at least 0.39 in magnitude
/// (so the subtraction at most multiplies `exp64`'s error by 2.6: below 2^-30).
#[inline(always)]
fn expm1_64(y: f64) -> f64 {
    // y * (1 + y * ...) keeps the sign of a zero (y + y * (y * ...) would not: -0 * -0 is +0).
    let small = y
        * (1.0
            + y * horner(
                y,
                &[
                    1.0 / 3628800.0,
                    1.0 / 362880.0,
                    1.0 / 40320.0,
                    1.0 / 5040.0,
                    1.0 / 720.0,
                    1.0 / 120.0,
                    1.0 / 24.0,
                    1.0 / 6.0,
                    0.5,
                ],
            ));
    let big = exp64(y) - 1.0;
    if y.abs() < 0.5 { small } else { big }
}

/// `ln y` for positive, finite, normal f64 `y`: `y = 2^k m`, m in [sqrt(1/2), sqrt(2)),
/// `ln m = 2 atanh(s)`, s = (m-1)/(m+1), |s| <= 0.172, odd series to s^21.
#[inline(always)]
fn log64(y: f64) -> f64 {
    // Adding 1 - sqrt(1/2) in the bits makes the exponent field that of y / sqrt(1/2).
    const SQRT_HALF_BITS: u64 = 0x3fe6_a09e_667f_3bcd;
    let bits = y.to_bits();
    let ku = bits.wrapping_add(0x3ff0_0000_0000_0000 - SQRT_HALF_BITS) >> 52; // k + 1023
    let m = f64::from_bits(bits.wrapping_sub(ku.wrapping_sub(1023) << 52));
    // ku < 2^52, so this is exact: ku as f64 without an integer-to-float instruction.
    let k = (f64::from_bits(ku | 0x4330_0000_0000_0000) - 4503599627370496.0) - 1023.0;
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let series = horner(
        z,
        &[
            1.0 / 21.0,
            1.0 / 19.0,
            1.0 / 17.0,
            1.0 / 15.0,
            1.0 / 13.0,
            1.0 / 11.0,
            1.0 / 9.0,
            1.0 / 7.0,
            1.0 / 5.0,
            1.0 / 3.0,
        ],
    );
    k * LN2 + (2.0 * s + 2.0 * s * (z * series))
}

// f32 `e^r` pieces shared by `exp` and `tanh`.
const SHIFT32: f32 = 12582912.0; // 1.5 * 2^23: adding it rounds to an integer.
// 0.693359375, 9 significant bits: n * LN2_HI32 is exact for |n| < 2^15.
const LN2_HI32: f32 = f32::from_bits(0x3f31_8000);
const LN2_LO32: f32 = -2.121_944_4e-4; // ln 2 - LN2_HI32
/// Cephes' `expf` polynomial: e^r ~ 1 + r + r^2 P(r) for |r| <= ln2/2.
const EXP_P32: [f32; 6] = [1.987_569_1e-4, 1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 0.166_666_65, 0.5];

/// 2^k for -127 < k < 128, built in the exponent bits. Wrapping: a NaN's `n` is nonsense,
/// and its other factors are NaN anyway.
#[inline(always)]
fn pow2_32(k: i32) -> f32 {
    f32::from_bits((k.wrapping_add(127) as u32) << 23)
}

/// `e^x` in f32 arithmetic, so a vector holds 16 lanes with AVX-512 instead of `exp64`'s 8
/// (the exp row ran at 0.7x NumPy's SVML through `exp64`). Cephes' `expf`: `x = n ln2 + r`
/// with ln 2 split so `n * LN2_HI32` is exact, `e^r` by a degree-7 polynomial (at most 0.991
/// ulp over every f32 argument, checked exhaustively against f64 when this was written;
/// `tests/suite/cpu_math.rs` checks the 1-ulp bound on a sample of the range), scaled by
/// 2^n in two halves, so that each factor is a normal number and only the last product
/// rounds (subnormal results and overflow to infinity included).
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    // Beyond these e^x is 0 or infinity in f32 (2^-150 and 2^128); NaN stays NaN.
    let x = x.clamp(-104.0, 89.0);
    let big = x * std::f32::consts::LOG2_E + SHIFT32;
    let n = big - SHIFT32;
    let r = (x - n * LN2_HI32) - n * LN2_LO32;
    let e = r * r * horner32(r, &EXP_P32) + r + 1.0;
    // The low mantissa bits of `big` hold n (|n| <= 150); 2^n as 2^h * 2^(n - h).
    let n = (big.to_bits() as i32).wrapping_sub(SHIFT32.to_bits() as i32);
    let h = n >> 1;
    e * pow2_32(h) * pow2_32(n.wrapping_sub(h))
}

/// Horner's scheme in f32, highest coefficient first.
#[inline(always)]
fn horner32<const N: usize>(x: f32, c: &[f32; N]) -> f32 {
    let mut p = c[0];
    for &k in &c[1..] {
        p = p * x + k;
    }
    p
}

/// `e^x - 1`.
#[inline(always)]
pub(crate) fn expm1(x: f32) -> f32 {
    expm1_64(x as f64) as f32
}

/// tanh a ~ a + a^3 P(a^2) for 0 <= a < 0.55: minimax (relative error of tanh below
/// 2^-29 with these f32 coefficients).
const TANH_P32: [f32; 5] = [-0.006_242_849_4, 0.021_050_714, -0.053_847_548, 0.133_325_44, -0.333_333_16];

/// `tanh x` in f32 arithmetic, 16 lanes per AVX-512 vector (through `expm1_64` in f64 the
/// CPU's `tanh(exp(a*b+c)*0.5)` ran at 0.63x NumPy). At most 0.7782 ulp (at 0.89384913) over
/// every f32 argument, checked exhaustively against f64 when this was written. Both forms
/// below are computed for `a = |x|` and one selected; x's sign is then copied on, so ±0
/// keep theirs, ±inf give ±1 and NaN stays NaN.
///
/// - a < 0.55 (tanh < 1/2): `a + a (z P(z))`, z = a².
/// - a >= 0.55: `1 - q`, q = 2 / (e^(2a) + 1) <= 1/2. q's ulp is up to half the result's,
///   so each rounding of q costs up to 1/4 ulp on top of the final 1/2 (Cephes' form,
///   which rounds every step, reached 1.33 ulp at 0.628), so the steps are compensated.
///   With `2a = n ln2 + r`, `e^(2a) + 1 = 2^n D`, `D = (1 + 2^-n + r_hi) + (r_lo + e^r - 1 - r)`:
///   the first sum is exact (2a >= 1.1, so r_hi = 2a - n LN2_HI32 and 1 + 2^-n fit one
///   f32 together), adding the small rest rounds with its error kept (Fast2Sum), q is
///   corrected to first order for that error, and `1 - q` is split into its rounded value
///   and exact remainder. Only the division and the last addition round at full weight.
///   2a is clamped to 20, where tanh has rounded to 1 (beyond 9.01) and 2^-n is normal.
#[inline(always)]
pub(crate) fn tanh(x: f32) -> f32 {
    let a = x.abs();
    let z = a * a;
    let small = a + a * (z * horner32(z, &TANH_P32));
    // The comparison is false for NaN, which stays NaN.
    let y = if a > 10.0 { 20.0 } else { a + a };
    let big = y * std::f32::consts::LOG2_E + SHIFT32;
    let nf = big - SHIFT32;
    let r_hi = y - nf * LN2_HI32; // exact
    let r_lo = nf * -LN2_LO32;
    let r = r_hi + r_lo;
    let t = r * r * horner32(r, &EXP_P32); // e^r - 1 - r
    let n = (big.to_bits() as i32).wrapping_sub(SHIFT32.to_bits() as i32);
    let p = pow2_32(-n);
    // Exact for 1 <= y < 16 (n <= 23); beyond, q < 2^-22 and its rounding is negligible.
    let h0 = (1.0 + p) + r_hi;
    let l0 = r_lo + t;
    let d = h0 + l0;
    let d_lo = l0 - (d - h0); // D = d + d_lo (Fast2Sum: |h0| >= |l0|)
    let w = 1.0 / d;
    let q = (p + p) * w; // 2^(1-n) / d, exactly w scaled
    let q_fix = q * d_lo * w; // q - 2^(1-n) / D, to first order
    let h = 1.0 - q;
    let h_lo = (1.0 - h) - q; // 1 - q = h + h_lo (Fast2Sum)
    let large = h + (h_lo + q_fix);
    let v = if a < 0.55 { small } else { large };
    v.copysign(x)
}

/// `1 / (1 + e^-x)` (no cancellation in f64 for any x).
#[inline(always)]
pub(crate) fn sigmoid(x: f32) -> f32 {
    (1.0 / (1.0 + exp64(-(x as f64)))) as f32
}

/// `ln x`: -inf at ±0, NaN below 0 and for NaN, inf at inf.
#[inline(always)]
pub(crate) fn log(x: f32) -> f32 {
    let r = log64(x as f64) as f32;
    finish_log(x, r, 0.0)
}

/// `log2 x`, the same special values as [`log`].
#[inline(always)]
pub(crate) fn log2(x: f32) -> f32 {
    let r = (log64(x as f64) * INV_LN2) as f32;
    finish_log(x, r, 0.0)
}

/// `ln(1 + x)`: the series x - x²/2 + x³/3 for |x| < 2^-20 (where 1 + x in f64 would
/// round), `log64(1 + x)` beyond, where 1 + x is exact in f64 (or rounds only relative
/// to a large result).
#[inline(always)]
pub(crate) fn log1p(x: f32) -> f32 {
    let y = x as f64;
    let small = y + y * (y * (-0.5 + y * (1.0 / 3.0)));
    let r = if y.abs() < 1.0 / 1048576.0 { small } else { log64(1.0 + y) } as f32;
    finish_log(x, r, -1.0)
}

/// The special values of a logarithm whose pole is at `x = pole`.
#[inline(always)]
fn finish_log(x: f32, r: f32, pole: f32) -> f32 {
    if x > pole && x < f32::INFINITY {
        r
    } else if x == pole {
        f32::NEG_INFINITY
    } else if x == f32::INFINITY {
        x
    } else {
        f32::NAN
    }
}

/// |x| up to which [`sin`] and [`cos`] reduce by Cody–Waite in f64 (n < 2^20, so
/// `n * PIO2_1` and `n * PIO2_2` are exact); beyond, and for inf/NaN, the caller
/// uses the scalar libm function (Payne–Hanek).
const TRIG_LIMIT: f32 = 1_000_000.0;

/// True where [`sin`] and [`cos`] are valid.
#[inline(always)]
pub(crate) fn sin_cos_fast_range(x: f32) -> bool {
    x.abs() <= TRIG_LIMIT
}

/// `(r, q)`: `x = n π/2 + r`, |r| <= π/4, q = n mod 4. π/2 in three parts (fdlibm's
/// pio2_1, pio2_2 of 33 bits, pio2_2t), so r keeps its relative accuracy even when x is
/// close to a multiple of π/2 (the first two subtractions are exact).
#[inline(always)]
fn reduce_pio2(x: f32) -> (f64, u64) {
    const TWO_OVER_PI: f64 = std::f64::consts::FRAC_2_PI;
    const PIO2_1: f64 = f64::from_bits(0x3ff9_21fb_5440_0000);
    const PIO2_2: f64 = f64::from_bits(0x3dd0_b461_1a60_0000);
    const PIO2_2T: f64 = f64::from_bits(0x3ba3_198a_2e03_7073);
    let y = x as f64;
    let big = y * TWO_OVER_PI + SHIFTER;
    let n = big - SHIFTER;
    let r = ((y - n * PIO2_1) - n * PIO2_2) - n * PIO2_2T;
    (r, big.to_bits() & 3)
}

/// sin and cos of |r| <= π/4 (a little more is fine): Taylor series to r^17 and r^18.
#[inline(always)]
fn sin_cos_poly(r: f64) -> (f64, f64) {
    let z = r * r;
    // r * (1 + ...) keeps the sign of a zero r, as sin(-0) = -0 requires.
    let s = r
        * (1.0
            + z * horner(
                z,
                &[
                    1.0 / 355687428096000.0,
                    -1.0 / 1307674368000.0,
                    1.0 / 6227020800.0,
                    -1.0 / 39916800.0,
                    1.0 / 362880.0,
                    -1.0 / 5040.0,
                    1.0 / 120.0,
                    -1.0 / 6.0,
                ],
            ));
    let c = 1.0
        + z * horner(
            z,
            &[
                -1.0 / 6402373705728000.0,
                1.0 / 20922789888000.0,
                -1.0 / 87178291200.0,
                1.0 / 479001600.0,
                -1.0 / 3628800.0,
                1.0 / 40320.0,
                -1.0 / 720.0,
                1.0 / 24.0,
                -0.5,
            ],
        );
    (s, c)
}

/// `sin x` for |x| <= 10^6 (see [`sin_cos_fast_range`]).
#[inline(always)]
pub(crate) fn sin(x: f32) -> f32 {
    let (r, q) = reduce_pio2(x);
    let (s, c) = sin_cos_poly(r);
    let v = if q & 1 == 0 { s } else { c };
    (if q & 2 == 0 { v } else { -v }) as f32
}

/// `cos x` for |x| <= 10^6 (see [`sin_cos_fast_range`]).
#[inline(always)]
pub(crate) fn cos(x: f32) -> f32 {
    let (r, q) = reduce_pio2(x);
    let (s, c) = sin_cos_poly(r);
    let v = if q & 1 == 0 { c } else { s };
    (if (q + 1) & 2 == 0 { v } else { -v }) as f32
}

/// True where [`pow`] is valid: a positive finite base and a finite exponent. Elsewhere
/// (zeros, negative bases, infinities, NaN) C99's special cases apply, from libm.
#[inline(always)]
pub(crate) fn pow_fast_range(x: f32, y: f32) -> bool {
    x > 0.0 && x < f32::INFINITY && y.abs() < f32::INFINITY
}

/// `x^y = e^(y ln x)` in f64: ln x to 2^-50 relative, so the exponent's error stays
/// below 2^-44 while the result is in f32's range.
#[inline(always)]
pub(crate) fn pow(x: f32, y: f32) -> f32 {
    exp64(y as f64 * log64(x as f64)) as f32
}
