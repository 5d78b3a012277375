//! Properties against references computed here (in f64, or with NumPy's own algorithm in
//! f32), one or a few per op family, on every device of `common::devices()`: unary float
//! ops, binary ops with broadcasting, `astype` between all dtype pairs, reductions and
//! scans over random axes of contiguous and strided views, indexing (take,
//! take_along_axis, scatter, scatter_add, triu/tril) and matmul. Inputs mix special values
//! (±0, ±inf, NaN, 1e-30, 1e30, subnormals, f32::MAX, ties) into wide random ones; each
//! case batches a few hundred values into one array so GPU round trips stay few.
//!
//! Tolerance policy: a float result passes when it is within `ulps * ulp(want) + abs` of
//! the exact reference (`ulp` in the result's dtype; the subnormal spacing below its
//! smallest normal). NaN must give NaN, an infinity itself, and a finite reference beyond
//! the dtype's range the infinity of its sign (unless within tolerance of the largest
//! finite value). The sign of zero is compared in `astype` only. Correctly rounded
//! operations (IEEE add/sub/mul/div/sqrt on the CPU, abs, neg, floor, ceil, round, sign,
//! square, conversions, NumPy's floor_divide/remainder) and all integer results must be
//! exact. CPU transcendentals: 2 ulp (libm), stated per op. GPU: the WGSL bounds, stated
//! per op (div 2.5 ulp, and so floor_divide beyond 2^23, exp 3 + 2|x| ulp, log 3 ulp plus 2^-21 absolute, sin/cos 2^-11
//! absolute and only on [-pi, pi], atan2 4096 ulp); the GPU may flush subnormal results to
//! zero and read subnormal inputs as zeros of their sign (NVIDIA does both). Reductions and matmul: `n * 2^-23 * sum|terms|` absolute, the worst case of
//! f32 accumulation over `n` terms; integer reductions are exact (wrapping).

use crate::common;

use common::{bcast_index, devices, numel, on, ravel, unravel};
use half::{bf16, f16};
use lazuli::{Array, DType, Device, Error, Result, SliceArg};
use proptest::prelude::*;

fn config(cases: u32) -> ProptestConfig {
    // No regression files: shrinking on a GPU is slow, and the suite writes nothing.
    ProptestConfig { cases, max_shrink_iters: 48, failure_persistence: None, ..ProptestConfig::default() }
}

// ---------------------------------------------------------------------------------------
// Host helpers: random numbers, float formats, comparison.

/// splitmix64: the bulk data of a case comes from one proptest seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
}

fn pow2(e: i32) -> f64 {
    if e >= -1022 { f64::from_bits(((e + 1023) as u64) << 52) } else { f64::from_bits(1u64 << (e + 1074)) }
}

/// A binary float format: precision `p` (with the implicit bit), smallest normal
/// exponent, largest finite value.
#[derive(Clone, Copy, Debug)]
struct Fmt {
    p: i32,
    emin: i32,
    max: f64,
}

fn fmt_of(d: DType) -> Fmt {
    match d {
        DType::F16 => Fmt { p: 11, emin: -14, max: 65504.0 },
        DType::BF16 => Fmt { p: 8, emin: -126, max: bf16::MAX.to_f64() },
        DType::F32 => Fmt { p: 24, emin: -126, max: f32::MAX as f64 },
        DType::F64 => Fmt { p: 53, emin: -1022, max: f64::MAX },
        _ => unreachable!("{d} is not a float"),
    }
}

/// `floor(log2 |a|)` of a non-zero finite f64 (normal or not).
fn exponent(a: f64) -> i32 {
    let b = ((a.to_bits() >> 52) & 0x7ff) as i32;
    if b == 0 { -1023 } else { b - 1023 }
}

fn ulp(f: Fmt, x: f64) -> f64 {
    let a = x.abs();
    let e = if a == 0.0 || !a.is_finite() { f.emin } else { exponent(a).max(f.emin) };
    pow2(e - f.p + 1)
}

/// `x` rounded to nearest-even in format `f`, directly (one rounding), with overflow to inf.
fn round_to(f: Fmt, x: f64) -> f64 {
    if f.p == 53 || !x.is_finite() || x == 0.0 {
        return x;
    }
    let a = x.abs();
    let q = exponent(a).max(f.emin) - (f.p - 1);
    let r = (a / pow2(q)).round_ties_even() * pow2(q);
    (if r > f.max { f64::INFINITY } else { r }).copysign(x)
}

/// An integer rounded to nearest-even in format `f` with exact integer arithmetic (so an
/// i64 beyond 2^53 is rounded once, not through f64).
fn round_int(x: i128, f: Fmt) -> f64 {
    let m = x.unsigned_abs();
    if m == 0 {
        return 0.0;
    }
    let len = 128 - m.leading_zeros() as i32;
    let r = if len <= f.p {
        m as f64
    } else {
        let shift = len - f.p;
        let mut q = m >> shift;
        let rem = m & ((1u128 << shift) - 1);
        let half = 1u128 << (shift - 1);
        if rem > half || (rem == half && q & 1 == 1) {
            q += 1;
        }
        q as f64 * pow2(shift)
    };
    let r = if r > f.max { f64::INFINITY } else { r };
    if x < 0 { -r } else { r }
}

#[derive(Clone, Copy, Debug)]
struct Tol {
    ulps: f64,
    abs: f64,
}

const EXACT: Tol = Tol { ulps: 0.0, abs: 0.0 };

const fn ulps(n: f64) -> Tol {
    Tol { ulps: n, abs: 0.0 }
}

/// The comparison of the module doc. `flush`: a subnormal reference may give zero (GPU).
fn close(f: Fmt, got: f64, want: f64, tol: Tol, flush: bool) -> bool {
    if want.is_nan() {
        return got.is_nan();
    }
    if got.is_nan() {
        return false;
    }
    if got == round_to(f, want) {
        return true;
    }
    let slack = tol.ulps * ulp(f, want) + tol.abs;
    if got.is_infinite() {
        return want.is_finite() && got.signum() == want.signum() && want.abs() + slack >= f.max;
    }
    if want.is_infinite() {
        return false;
    }
    if flush && want.abs() < pow2(f.emin) && got == 0.0 {
        return true;
    }
    (got - want).abs() <= slack
}

/// `x` as a driver that flushes subnormal operands sees it: subnormals of `f` become a
/// zero of their sign (WGSL and Vulkan allow it; NVIDIA does it, lavapipe does not).
fn flushed(f: Fmt, x: f64) -> f64 {
    if x != 0.0 && x.abs() < pow2(f.emin) { 0.0f64.copysign(x) } else { x }
}

fn fail_if_any(what: &str, dev: Device, fails: &[String]) {
    if !fails.is_empty() {
        panic!("{what} on {dev}: {} mismatches; first: {}", fails.len(), fails[..fails.len().min(6)].join("; "));
    }
}

fn is_gpu(dev: Device) -> bool {
    dev != Device::cpu()
}

/// Whether `dev` runs `dtype`: the GPU has no i64, f64 or bf16, and f16 only with
/// SHADER_F16 (it answers `Unsupported` otherwise).
fn runs(dev: Device, dtype: DType) -> bool {
    if !is_gpu(dev) {
        return true;
    }
    match dtype {
        DType::I64 | DType::F64 | DType::BF16 => false,
        DType::F16 => {
            static F16: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
            *F16.get_or_init(|| {
                let r = on(dev, || Array::from_slice(&[f16::ONE], &[1])?.add(1.0)?.to_vec::<f16>());
                match r {
                    Ok(_) => true,
                    Err(e) if matches!(e.root_cause(), Error::Unsupported { .. }) => false,
                    Err(e) => panic!("f16 probe on {dev}: {e}"),
                }
            })
        }
        _ => true,
    }
}

/// A float array of `dtype` from values it holds exactly.
fn floats(v: &[f64], shape: &[usize], dtype: DType) -> Result<Array> {
    match dtype {
        DType::F32 => Array::from_slice(&v.iter().map(|&x| x as f32).collect::<Vec<_>>(), shape),
        DType::F16 => Array::from_slice(&v.iter().map(|&x| f16::from_f64(x)).collect::<Vec<_>>(), shape),
        DType::BF16 => Array::from_slice(&v.iter().map(|&x| bf16::from_f64(x)).collect::<Vec<_>>(), shape),
        DType::F64 => Array::from_slice(v, shape),
        _ => unreachable!(),
    }
}

/// An integer (or bool) array of `dtype` from values it holds (`as` for the rest).
fn ints(v: &[i128], shape: &[usize], dtype: DType) -> Result<Array> {
    match dtype {
        DType::I32 => Array::from_slice(&v.iter().map(|&x| x as i32).collect::<Vec<_>>(), shape),
        DType::U32 => Array::from_slice(&v.iter().map(|&x| x as u32).collect::<Vec<_>>(), shape),
        DType::I64 => Array::from_slice(&v.iter().map(|&x| x as i64).collect::<Vec<_>>(), shape),
        DType::Bool => Array::from_slice(&v.iter().map(|&x| x != 0).collect::<Vec<_>>(), shape),
        _ => unreachable!(),
    }
}

fn to_f64s(a: &Array) -> Result<Vec<f64>> {
    Ok(match a.dtype() {
        DType::F32 => a.to_vec::<f32>()?.into_iter().map(f64::from).collect(),
        DType::F16 => a.to_vec::<f16>()?.into_iter().map(f16::to_f64).collect(),
        DType::BF16 => a.to_vec::<bf16>()?.into_iter().map(bf16::to_f64).collect(),
        DType::F64 => a.to_vec::<f64>()?,
        d => panic!("to_f64s of {d}"),
    })
}

fn to_i128s(a: &Array) -> Result<Vec<i128>> {
    Ok(match a.dtype() {
        DType::I32 => a.to_vec::<i32>()?.into_iter().map(i128::from).collect(),
        DType::U32 => a.to_vec::<u32>()?.into_iter().map(i128::from).collect(),
        DType::I64 => a.to_vec::<i64>()?.into_iter().map(i128::from).collect(),
        DType::Bool => a.to_vec::<bool>()?.into_iter().map(i128::from).collect(),
        d => panic!("to_i128s of {d}"),
    })
}

/// `v` wrapped into integer `dtype` (two's complement), as the kernels must.
fn wrap(v: i128, dtype: DType) -> i128 {
    match dtype {
        DType::I32 => v as i32 as i128,
        DType::U32 => v as u32 as i128,
        DType::I64 => v as i64 as i128,
        DType::Bool => (v != 0) as i128,
        _ => unreachable!(),
    }
}

/// Special f32 inputs, mixed into every float array.
const SPECIALS: [f32; 32] = [
    0.0,
    -0.0,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    1e-30,
    -1e-30,
    1e30,
    -1e30,
    1e-40,
    -1e-40,
    f32::MAX,
    -f32::MAX,
    f32::MIN_POSITIVE,
    1.0,
    -1.0,
    0.5,
    -0.5,
    1.5,
    2.5,
    -2.5,
    3.5,
    88.0,
    89.0,
    -88.0,
    -104.0,
    1e-7,
    0.999_999,
    -0.999_999,
    8_388_609.0,
    1e38,
    -2.0,
];

/// `n` f32 values: specials, wide magnitudes (1e-38 to 1e38, both signs) and uniform ones in
/// `[lo, hi)`.
fn mixed(rng: &mut Rng, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    (0..n)
        .map(|_| match rng.below(8) {
            0 => SPECIALS[rng.below(SPECIALS.len())] as f64,
            1 | 2 => {
                let m = 10f64.powf(rng.range(-38.0, 38.0));
                (if rng.below(2) == 0 { m } else { -m }) as f32 as f64
            }
            3 => rng.range(lo, hi).round(),
            _ => rng.range(lo, hi) as f32 as f64,
        })
        .collect()
}

/// Values of `mixed` held in `dtype` (f32 or f16).
fn held(v: Vec<f64>, dtype: DType) -> Vec<f64> {
    match dtype {
        DType::F16 => v.into_iter().map(|x| f16::from_f64(x).to_f64()).collect(),
        _ => v,
    }
}

// ---------------------------------------------------------------------------------------
// Unary float ops.

/// The inverse error function in f64 by bisection on `erf` (on `erfc` in the tails, where
/// `1 - |x|` is exact for an f32 `x`): slow but certainly right.
fn erfinv_ref(x: f64) -> f64 {
    let a = x.abs();
    if x.is_nan() || a > 1.0 {
        return f64::NAN;
    }
    if a == 1.0 {
        return f64::INFINITY.copysign(x);
    }
    if a == 0.0 {
        return x;
    }
    let (mut lo, mut hi) = (0.0f64, 10.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        let below = if a < 0.5 { libm::erf(mid) < a } else { libm::erfc(mid) > 1.0 - a };
        if below {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (0.5 * (lo + hi)).copysign(x)
}

struct UnaryCase {
    op: fn(&Array) -> Result<Array>,
    want: fn(f64) -> f64,
    /// Uniform part of the inputs.
    range: (f64, f64),
    cpu: Tol,
    /// The GPU's bound at input `x` (`None`: WGSL bounds nothing there).
    gpu: fn(f64) -> Option<Tol>,
}

/// sin/cos on the GPU: WGSL bounds them by 2^-11 absolute on [-pi, pi] only.
fn trig_gpu(x: f64) -> Option<Tol> {
    if !x.is_finite() {
        Some(EXACT)
    } else if x.abs() <= std::f64::consts::PI {
        Some(Tol { ulps: 0.0, abs: pow2(-11) })
    } else {
        None
    }
}

/// tan on the GPU: sin/cos's absolute error, amplified by 1/cos^2, so only |x| <= 1.
fn tan_gpu(x: f64) -> Option<Tol> {
    if !x.is_finite() {
        Some(EXACT)
    } else if x.abs() <= 1.0 {
        Some(Tol { ulps: 4.0, abs: pow2(-9) })
    } else {
        None
    }
}

/// exp-like growth: WGSL's exp is 3 + 2|x| ulp.
fn exp_ulps(x: f64, base: f64) -> f64 {
    base + 2.0 * x.abs().min(128.0)
}

fn unary_case(name: &str, c: &UnaryCase, seed: u64) {
    for dtype in [DType::F32, DType::F16] {
        let f = fmt_of(dtype);
        let mut rng = Rng(seed);
        let mut xs: Vec<f64> = SPECIALS.iter().map(|&x| x as f64).collect();
        xs.extend(mixed(&mut rng, 224, c.range.0, c.range.1));
        let xs = held(xs, dtype);
        for dev in devices() {
            if !runs(dev, dtype) {
                continue;
            }
            let gpu = is_gpu(dev);
            let got = on(dev, || to_f64s(&(c.op)(&floats(&xs, &[xs.len()], dtype)?)?))
                .unwrap_or_else(|e| panic!("{name} {dtype} on {dev}: {e}"));
            let mut fails = Vec::new();
            for (i, (&x, &g)) in xs.iter().zip(&got).enumerate() {
                let want = (c.want)(x);
                let tol = if gpu { (c.gpu)(x) } else { Some(c.cpu) };
                // f16 on the CPU computes in f32 and rounds once more: one f16 ulp.
                let tol = match (tol, dtype) {
                    (Some(t), DType::F16) if !gpu && t.ulps > 0.0 => Some(ulps(1.0)),
                    (t, _) => t,
                };
                let Some(tol) = tol else { continue };
                // The GPU may see a subnormal input as zero.
                let ok = close(f, g, want, tol, gpu) || (gpu && close(f, g, (c.want)(flushed(f, x)), tol, gpu));
                if !ok {
                    fails.push(format!("[{i}] {name}({x:e}) = {g:e}, want {want:e} ({tol:?})"));
                }
            }
            fail_if_any(&format!("{name} {dtype}"), dev, &fails);
        }
    }
}

macro_rules! unary_props {
    ($($(#[$m:meta])* $test:ident: $case:expr;)*) => {
        proptest! {
            #![proptest_config(config(12))]
            $(
                $(#[$m])*
                #[test]
                fn $test(seed in any::<u64>()) {
                    unary_case(stringify!($test), &$case, seed);
                }
            )*
        }
    };
}

const WIDE: (f64, f64) = (-100.0, 100.0);
const TRANS_CPU: Tol = ulps(2.0);

unary_props! {
    // WGSL bounds exp by 3 + 2|x| ulps, but lavapipe's exp exceeds that by a hair: 3.11
    // ulps at x = -0.0427 (bound 3.09), seen about once in 50 runs of this test.
    unary_exp: UnaryCase { op: |a| a.exp(), want: f64::exp, range: WIDE, cpu: TRANS_CPU,
        gpu: |x| Some(ulps(exp_ulps(x, 4.0))) };
    unary_expm1: UnaryCase { op: |a| a.expm1(), want: f64::exp_m1, range: WIDE, cpu: TRANS_CPU,
        gpu: |x| Some(ulps(exp_ulps(x, 8.0))) };
    unary_log: UnaryCase { op: |a| a.log(), want: f64::ln, range: (0.0, 10.0), cpu: TRANS_CPU,
        gpu: |_| Some(Tol { ulps: 3.0, abs: pow2(-21) }) };
    // No absolute slack near 0: accuracy there is log1p's point (its doc says so).
    unary_log1p: UnaryCase { op: |a| a.log1p(), want: f64::ln_1p, range: (-1.0, 10.0), cpu: TRANS_CPU,
        gpu: |_| Some(ulps(8.0)) };
    unary_log2: UnaryCase { op: |a| a.log2(), want: f64::log2, range: (0.0, 10.0), cpu: TRANS_CPU,
        gpu: |_| Some(Tol { ulps: 3.0, abs: pow2(-21) }) };
    unary_sqrt: UnaryCase { op: |a| a.sqrt(), want: f64::sqrt, range: (0.0, 100.0), cpu: EXACT,
        gpu: |_| Some(ulps(4.0)) };
    // The CPU rounds twice (sqrt, then 1/x): up to 2 ulp.
    unary_rsqrt: UnaryCase { op: |a| a.rsqrt(), want: |x| 1.0 / x.sqrt(), range: (0.0, 100.0), cpu: ulps(2.0),
        gpu: |_| Some(ulps(2.0)) };
    unary_reciprocal: UnaryCase { op: |a| a.reciprocal(), want: |x| 1.0 / x, range: WIDE, cpu: EXACT,
        gpu: |_| Some(ulps(2.5)) };
    unary_sin: UnaryCase { op: |a| a.sin(), want: f64::sin, range: (-7.0, 7.0), cpu: TRANS_CPU, gpu: trig_gpu };
    unary_cos: UnaryCase { op: |a| a.cos(), want: f64::cos, range: (-7.0, 7.0), cpu: TRANS_CPU, gpu: trig_gpu };
    unary_tan: UnaryCase { op: |a| a.tan(), want: f64::tan, range: (-1.5, 1.5), cpu: TRANS_CPU,
        gpu: tan_gpu };
    unary_tanh: UnaryCase { op: |a| a.tanh(), want: f64::tanh, range: (-10.0, 10.0), cpu: TRANS_CPU,
        gpu: |_| Some(ulps(8.0)) };
    unary_sigmoid: UnaryCase { op: |a| a.sigmoid(), want: |x| 1.0 / (1.0 + (-x).exp()), range: (-30.0, 30.0),
        cpu: ulps(4.0), gpu: |x| Some(ulps(exp_ulps(x, 8.0))) };
    unary_erf: UnaryCase { op: |a| a.erf(), want: libm::erf, range: (-4.0, 4.0), cpu: TRANS_CPU,
        gpu: |_| Some(ulps(16.0)) };
    unary_erfinv: UnaryCase { op: |a| a.erfinv(), want: erfinv_ref, range: (-1.0, 1.0), cpu: ulps(1.0),
        gpu: |_| Some(ulps(16.0)) };
    unary_abs: UnaryCase { op: |a| a.abs(), want: f64::abs, range: WIDE, cpu: EXACT, gpu: |_| Some(EXACT) };
    unary_neg: UnaryCase { op: |a| a.neg(), want: |x| -x, range: WIDE, cpu: EXACT, gpu: |_| Some(EXACT) };
    unary_floor: UnaryCase { op: |a| a.floor(), want: f64::floor, range: WIDE, cpu: EXACT, gpu: |_| Some(EXACT) };
    unary_ceil: UnaryCase { op: |a| a.ceil(), want: f64::ceil, range: WIDE, cpu: EXACT, gpu: |_| Some(EXACT) };
    unary_round: UnaryCase { op: |a| a.round(), want: f64::round_ties_even, range: (-8.0, 8.0), cpu: EXACT,
        gpu: |_| Some(EXACT) };
    unary_sign: UnaryCase { op: |a| a.sign(), want: |x| if x.is_nan() || x == 0.0 { x } else { x.signum() },
        range: WIDE, cpu: EXACT, gpu: |_| Some(EXACT) };
    unary_square: UnaryCase { op: |a| a.square(), want: |x| x * x, range: WIDE, cpu: EXACT, gpu: |_| Some(EXACT) };
}

// ---------------------------------------------------------------------------------------
// Binary ops.

/// NumPy's `npy_divmod` for f32 (numpy/_core/src/npymath/npy_math_internal.h.src), in f32
/// arithmetic as NumPy runs it: `(floor_divide, remainder)`.
fn npy_divmod(a: f32, b: f32) -> (f32, f32) {
    // fmod is exact, so computing it in f64 and narrowing changes nothing.
    let mut m = ((a as f64) % (b as f64)) as f32;
    if b == 0.0 {
        return (a / b, m);
    }
    let mut div = (a - m) / b;
    if m != 0.0 {
        if (b < 0.0) != (m < 0.0) {
            m += b;
            div -= 1.0;
        }
    } else {
        m = 0f32.copysign(b);
    }
    let fl = if div != 0.0 {
        let mut fl = div.floor();
        if div - fl > 0.5 {
            fl += 1.0;
        }
        fl
    } else {
        0f32.copysign(a / b)
    };
    (fl, m)
}

struct BinaryCase {
    op: fn(&Array, &Array) -> Result<Array>,
    /// Reference from the two f32 inputs.
    want: fn(f32, f32) -> f64,
    /// Uniform part of the inputs.
    range: (f64, f64),
    cpu: Tol,
    gpu: fn(f64, f64) -> Option<Tol>,
}

/// WGSL bounds division by 2.5 ulp only for a divisor in [2^-126, 2^126]; infinities,
/// zeros and NaN follow IEEE everywhere.
fn div_gpu(a: f64, b: f64) -> Option<Tol> {
    let unbounded = a.is_finite() && b.is_finite() && b != 0.0 && !(pow2(-126)..=pow2(126)).contains(&b.abs());
    if unbounded { None } else { Some(ulps(2.5)) }
}

/// floor_divide on the GPU is exact while the quotient has a fraction to floor; beyond
/// 2^23 it is the quotient itself, which WGSL's division gives within 2.5 ulp.
fn floor_divide_gpu(a: f64, b: f64) -> Option<Tol> {
    if (a / b).abs() >= pow2(23) { Some(ulps(2.5)) } else { Some(EXACT) }
}

/// pow on the GPU is exp2(y * log2(x)): its error grows with |y * log2 x|. WGSL bounds
/// log2's error by 3 ulp, but for x in [0.5, 2] by 2^-21 absolute, which `y` scales into a
/// relative error of up to ln2 |y| 2^-21 in the result (8 ln2 |y| ulps): an H100 gave
/// pow(0.97245532, -104) 25 ulps off.
fn pow_gpu(a: f64, b: f64) -> Option<Tol> {
    let t = (b * a.abs().log2()).abs();
    let near_one = if (0.5..=2.0).contains(&a.abs()) { 8.0 * std::f64::consts::LN_2 * b.abs() } else { 0.0 };
    Some(ulps(8.0 + 4.0 * if t.is_finite() { t.min(300.0) } else { 0.0 } + near_one.min(2400.0)))
}

/// A broadcasting pair of shapes: a target, each operand a suffix with some dims set to 1.
fn compatible_shapes(max_ndim: usize, max_dim: usize) -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    prop::collection::vec(1usize..=max_dim, 0..=max_ndim).prop_flat_map(|target| {
        let n = target.len();
        let (t1, t2) = (target.clone(), target);
        (0..=n, 0..=n, prop::collection::vec(any::<bool>(), n), prop::collection::vec(any::<bool>(), n)).prop_map(
            move |(ra, rb, ma, mb)| {
                let a: Vec<usize> = (n - ra..n).map(|i| if ma[i] { 1 } else { t1[i] }).collect();
                let b: Vec<usize> = (n - rb..n).map(|i| if mb[i] { 1 } else { t2[i] }).collect();
                (a, b)
            },
        )
    })
}

fn broadcast(a: &[usize], b: &[usize]) -> Vec<usize> {
    common::naive_broadcast(a, b).expect("the strategies make broadcastable shapes")
}

/// The pairs of `(a, b)` elements a broadcast op combines, in output order.
fn pairs<T: Copy>(a: &[T], sa: &[usize], b: &[T], sb: &[usize]) -> (Vec<usize>, Vec<(T, T)>) {
    let out = broadcast(sa, sb);
    let p = (0..numel(&out))
        .map(|i| {
            let idx = unravel(i, &out);
            (a[bcast_index(sa, &idx)], b[bcast_index(sb, &idx)])
        })
        .collect();
    (out, p)
}

fn check_binary_float(name: &str, c: &BinaryCase, a: &[f64], sa: &[usize], b: &[f64], sb: &[usize]) {
    let f = fmt_of(DType::F32);
    let (out, ps) = pairs(a, sa, b, sb);
    for dev in devices() {
        let gpu = is_gpu(dev);
        let got = on(dev, || {
            let r = (c.op)(&floats(a, sa, DType::F32)?, &floats(b, sb, DType::F32)?)?;
            assert_eq!(r.shape(), &out[..], "{name}: shape");
            to_f64s(&r)
        })
        .unwrap_or_else(|e| panic!("{name} on {dev}: {e}"));
        let mut fails = Vec::new();
        for (i, (&(x, y), &g)) in ps.iter().zip(&got).enumerate() {
            let want = (c.want)(x as f32, y as f32);
            let Some(tol) = (if gpu { (c.gpu)(x, y) } else { Some(c.cpu) }) else { continue };
            // The GPU may see either subnormal input as zero.
            let flush_ok = || {
                let (fx, fy) = (flushed(f, x), flushed(f, y));
                [(fx, y), (x, fy), (fx, fy)].iter().any(|&(p, q)| close(f, g, (c.want)(p as f32, q as f32), tol, gpu))
            };
            let ok = close(f, g, want, tol, gpu) || (gpu && flush_ok());
            if !ok {
                fails.push(format!("[{i}] {name}({x:e}, {y:e}) = {g:e}, want {want:e} ({tol:?})"));
            }
        }
        fail_if_any(name, dev, &fails);
    }
}

fn binary_case(name: &str, c: &BinaryCase, sa: &[usize], sb: &[usize], seed: u64) {
    let mut rng = Rng(seed);
    let a = mixed(&mut rng, numel(sa), c.range.0, c.range.1);
    let b = mixed(&mut rng, numel(sb), c.range.0, c.range.1);
    check_binary_float(name, c, &a, sa, &b, sb);
}

/// Every pair of these, for every float binary op (an outer product by broadcasting).
const PAIR_SPECIALS: [f32; 24] = [
    0.0,
    -0.0,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    1.0,
    -1.0,
    2.0,
    -2.0,
    0.5,
    -0.5,
    3.0,
    -3.0,
    7.5,
    -7.5,
    1e-30,
    -1e-30,
    1e30,
    3e38,
    -3e38,
    1e-40,
    f32::MIN_POSITIVE,
    0.1,
    -0.1,
];

fn binary_specials(name: &str, c: &BinaryCase) {
    let v: Vec<f64> = PAIR_SPECIALS.iter().map(|&x| x as f64).collect();
    let n = v.len();
    check_binary_float(&format!("{name} specials"), c, &v, &[n, 1], &v, &[1, n]);
}

macro_rules! binary_props {
    // Attributes before the first name apply to both tests, before the second to the
    // specials test only.
    ($($(#[$m:meta])* $test:ident, $(#[$sm:meta])* $specials:ident: $case:expr;)*) => {
        proptest! {
            #![proptest_config(config(24))]
            $(
                $(#[$m])*
                #[test]
                fn $test((sa, sb) in compatible_shapes(3, 5), seed in any::<u64>()) {
                    binary_case(stringify!($test), &$case, &sa, &sb, seed);
                }
            )*
        }
        $(
            $(#[$m])*
            $(#[$sm])*
            #[test]
            fn $specials() {
                binary_specials(stringify!($specials), &$case);
            }
        )*
    };
}

const CORRECTLY_ROUNDED: fn(f64, f64) -> Option<Tol> = |_, _| Some(EXACT);

binary_props! {
    binary_add, specials_add: BinaryCase { op: |a, b| a.add(b), want: |x, y| (x as f64) + (y as f64),
        range: WIDE, cpu: EXACT, gpu: CORRECTLY_ROUNDED };
    binary_sub, specials_sub: BinaryCase { op: |a, b| a.sub(b), want: |x, y| (x as f64) - (y as f64),
        range: WIDE, cpu: EXACT, gpu: CORRECTLY_ROUNDED };
    binary_mul, specials_mul: BinaryCase { op: |a, b| a.mul(b), want: |x, y| (x as f64) * (y as f64),
        range: WIDE, cpu: EXACT, gpu: CORRECTLY_ROUNDED };
    // f64 division of f32 inputs rounded to f32 is the correctly rounded f32 quotient.
    binary_div, specials_div: BinaryCase { op: |a, b| a.div(b), want: |x, y| (x as f64) / (y as f64),
        range: WIDE, cpu: EXACT, gpu: div_gpu };
    binary_pow,
    specials_pow: BinaryCase { op: |a, b| a.pow(b), want: |x, y| (x as f64).powf(y as f64),
        range: (-8.0, 8.0), cpu: TRANS_CPU, gpu: pow_gpu };
    // WGSL bounds atan2 by 4096 ulp; C's special cases differ by far more.
    binary_atan2,
    specials_atan2: BinaryCase { op: |a, b| a.atan2(b), want: |y, x| (y as f64).atan2(x as f64),
        range: WIDE, cpu: TRANS_CPU, gpu: |_, _| Some(ulps(4096.0)) };
    binary_maximum, specials_maximum: BinaryCase { op: |a, b| a.maximum(b),
        want: |x, y| if x.is_nan() || y.is_nan() { f64::NAN } else { x.max(y) as f64 },
        range: WIDE, cpu: EXACT, gpu: CORRECTLY_ROUNDED };
    binary_minimum, specials_minimum: BinaryCase { op: |a, b| a.minimum(b),
        want: |x, y| if x.is_nan() || y.is_nan() { f64::NAN } else { x.min(y) as f64 },
        range: WIDE, cpu: EXACT, gpu: CORRECTLY_ROUNDED };
    binary_floor_divide, specials_floor_divide: BinaryCase { op: |a, b| a.floor_divide(b),
        want: |x, y| npy_divmod(x, y).0 as f64, range: (-20.0, 20.0), cpu: EXACT, gpu: floor_divide_gpu };
    binary_remainder,
    specials_remainder: BinaryCase { op: |a, b| a.remainder(b),
        want: |x, y| npy_divmod(x, y).1 as f64, range: (-20.0, 20.0), cpu: EXACT, gpu: CORRECTLY_ROUNDED };
}

type Cmp = (&'static str, fn(&Array, &Array) -> Result<Array>, fn(f64, f64) -> bool);

const COMPARISONS: [Cmp; 6] = [
    ("eq", |a, b| a.eq(b), |x, y| x == y),
    ("ne", |a, b| a.ne(b), |x, y| x != y),
    ("lt", |a, b| a.lt(b), |x, y| x < y),
    ("le", |a, b| a.le(b), |x, y| x <= y),
    ("gt", |a, b| a.gt(b), |x, y| x > y),
    ("ge", |a, b| a.ge(b), |x, y| x >= y),
];

fn int_values(rng: &mut Rng, n: usize, dtype: DType) -> Vec<i128> {
    let (lo, hi): (i128, i128) = match dtype {
        DType::I32 => (i32::MIN as i128, i32::MAX as i128),
        DType::U32 => (0, u32::MAX as i128),
        DType::I64 => (i64::MIN as i128, i64::MAX as i128),
        _ => unreachable!(),
    };
    let edges = [lo, hi, lo + 1, hi - 1, 0, 1, 2, 3, -1, -2, -3, 7, -7, 65536, 46341, -46341];
    (0..n)
        .map(|_| {
            let v = match rng.below(4) {
                0 => edges[rng.below(edges.len())],
                1 => rng.next() as i128,
                _ => rng.below(41) as i128 - 20,
            };
            wrap(v, dtype)
        })
        .collect()
}

/// Python's floor division and modulo, with the documented 0 for a zero divisor.
fn py_divmod(a: i128, b: i128) -> (i128, i128) {
    if b == 0 {
        return (0, 0);
    }
    let mut q = a / b;
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q -= 1;
    }
    (q, a - b * q)
}

fn int_pow(a: i128, e: i128, dtype: DType) -> i128 {
    match dtype {
        DType::I32 => (a as i32).wrapping_pow(e as u32) as i128,
        DType::U32 => (a as u32).wrapping_pow(e as u32) as i128,
        DType::I64 => (a as i64).wrapping_pow(e as u32) as i128,
        _ => unreachable!(),
    }
}

type IntOp = (&'static str, fn(&Array, &Array) -> Result<Array>, fn(i128, i128) -> i128);

const INT_OPS: [IntOp; 7] = [
    ("add", |a, b| a.add(b), |x, y| x + y),
    ("sub", |a, b| a.sub(b), |x, y| x - y),
    ("mul", |a, b| a.mul(b), |x, y| x * y),
    ("floor_divide", |a, b| a.floor_divide(b), |x, y| py_divmod(x, y).0),
    ("remainder", |a, b| a.remainder(b), |x, y| py_divmod(x, y).1),
    ("maximum", |a, b| a.maximum(b), |x, y| x.max(y)),
    ("minimum", |a, b| a.minimum(b), |x, y| x.min(y)),
];

fn int_binary_case(sa: &[usize], sb: &[usize], seed: u64) {
    for dtype in [DType::I32, DType::U32, DType::I64] {
        let mut rng = Rng(seed);
        let a = int_values(&mut rng, numel(sa), dtype);
        let b = int_values(&mut rng, numel(sb), dtype);
        let e: Vec<i128> = (0..numel(sb)).map(|_| rng.below(41) as i128).collect();
        let (out, ps) = pairs(&a, sa, &b, sb);
        let (_, pe) = pairs(&a, sa, &e, sb);
        for dev in devices() {
            if !runs(dev, dtype) {
                continue;
            }
            let mut fails = Vec::new();
            on(dev, || {
                let (x, y) = (ints(&a, sa, dtype)?, ints(&b, sb, dtype)?);
                for (name, op, want) in INT_OPS {
                    let r = op(&x, &y)?;
                    assert_eq!((r.shape(), r.dtype()), (&out[..], dtype), "{name} {dtype}");
                    for (i, (&(p, q), g)) in ps.iter().zip(to_i128s(&r)?).enumerate() {
                        let w = wrap(want(p, q), dtype);
                        if g != w {
                            fails.push(format!("[{i}] {name} {dtype}({p}, {q}) = {g}, want {w}"));
                        }
                    }
                }
                let r = x.pow(&ints(&e, sb, dtype)?)?;
                for (i, (&(p, q), g)) in pe.iter().zip(to_i128s(&r)?).enumerate() {
                    let w = int_pow(p, q, dtype);
                    if g != w {
                        fails.push(format!("[{i}] pow {dtype}({p}, {q}) = {g}, want {w}"));
                    }
                }
                for (name, op, want) in COMPARISONS {
                    let r = op(&x, &y)?;
                    for (i, (&(p, q), g)) in ps.iter().zip(to_i128s(&r)?).enumerate() {
                        if (g != 0) != want(p as f64, q as f64) && (p == q) == (p as f64 == q as f64) {
                            fails.push(format!("[{i}] {name} {dtype}({p}, {q}) = {g}"));
                        }
                    }
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("int binary {dtype} on {dev}: {e}"));
            fail_if_any(&format!("int binary {dtype}"), dev, &fails);
        }
    }
}

fn comparison_case(sa: &[usize], sb: &[usize], seed: u64) {
    let mut rng = Rng(seed);
    // Few distinct values, so equal pairs are common.
    let a: Vec<f64> = mixed(&mut rng, numel(sa), -3.0, 3.0).into_iter().map(|x| x.round()).collect();
    let b: Vec<f64> = mixed(&mut rng, numel(sb), -3.0, 3.0).into_iter().map(|x| x.round()).collect();
    let (_, ps) = pairs(&a, sa, &b, sb);
    for dev in devices() {
        let mut fails = Vec::new();
        on(dev, || {
            let (x, y) = (floats(&a, sa, DType::F32)?, floats(&b, sb, DType::F32)?);
            for (name, op, want) in COMPARISONS {
                let r = op(&x, &y)?;
                for (i, (&(p, q), g)) in ps.iter().zip(to_i128s(&r)?).enumerate() {
                    if (g != 0) != want(p, q) {
                        fails.push(format!("[{i}] {name}({p:e}, {q:e}) = {g}"));
                    }
                }
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("comparisons on {dev}: {e}"));
        fail_if_any("comparisons f32", dev, &fails);
    }
}

proptest! {
    #![proptest_config(config(24))]

    /// Integer add/sub/mul wrap, floor_divide/remainder are Python's (0 for a zero
    /// divisor, as documented), pow wraps; i32 and u32 everywhere, i64 on the CPU.
    #[test]
    fn binary_int((sa, sb) in compatible_shapes(3, 5), seed in any::<u64>()) {
        int_binary_case(&sa, &sb, seed);
    }

    #[test]
    fn comparisons_f32((sa, sb) in compatible_shapes(3, 5), seed in any::<u64>()) {
        comparison_case(&sa, &sb, seed);
    }
}

// ---------------------------------------------------------------------------------------
// astype.

#[derive(Clone, Copy, Debug, PartialEq)]
enum V {
    I(i128),
    F(f64),
}

/// `astype`'s documented semantics: `as` (floats truncate toward zero into integers,
/// saturating, NaN to 0; integers wrap; non-zero is true); float targets round to
/// nearest-even once, from the exact source value.
fn cast_ref(v: V, to: DType) -> V {
    match (v, to) {
        (V::I(x), DType::Bool) => V::I((x != 0) as i128),
        (V::F(x), DType::Bool) => V::I((x != 0.0) as i128),
        (V::I(x), DType::I32 | DType::U32 | DType::I64) => V::I(wrap(x, to)),
        (V::F(x), DType::I32) => V::I(x as i32 as i128),
        (V::F(x), DType::U32) => V::I(x as u32 as i128),
        (V::F(x), DType::I64) => V::I(x as i64 as i128),
        (V::I(x), _) => V::F(round_int(x, fmt_of(to))),
        (V::F(x), _) => V::F(round_to(fmt_of(to), x)),
    }
}

fn same_value(got: V, want: V) -> bool {
    match (got, want) {
        (V::F(g), V::F(w)) => (g.is_nan() && w.is_nan()) || (g == w && g.is_sign_negative() == w.is_sign_negative()),
        _ => got == want,
    }
}

/// Source values for `dtype`: edge cases of the conversions, then random bit patterns and
/// magnitudes.
fn cast_sources(rng: &mut Rng, dtype: DType) -> Vec<V> {
    let n = 96;
    let p2 = |e: i32| pow2(e);
    let float_edges = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        0.5,
        -0.5,
        1.5,
        -1.5,
        2.5,
        -0.99,
        p2(31),
        -p2(31),
        p2(31) - 128.0,
        p2(32),
        p2(32) - 256.0,
        -p2(31) - 256.0,
        65504.0,
        65519.0,
        65520.0,
        -65520.0,
        65536.0,
        1e-8,
        3e-8,
        1e-5,
        // Ties of f32 -> f16 and f32 -> bf16 (to even: down, up).
        1.0 + p2(-11),
        1.0 + 3.0 * p2(-11),
        1.0 + p2(-8),
        1.0 + 3.0 * p2(-8),
        1e30,
        3.4e38,
        -3.4e38,
        // Just above a tie of f16/bf16/f32: one rounding goes up, rounding through f32 would
        // go down (to even).
        1.0 + p2(-11) + p2(-40),
        1.0 + p2(-8) + p2(-40),
        1.0 + p2(-24) + p2(-60),
        p2(63),
        -p2(63),
        1e300,
        -1e-300,
        1e-320,
    ];
    let int_edges: [i128; 16] = [
        0,
        1,
        -1,
        i32::MIN as i128,
        i32::MAX as i128,
        u32::MAX as i128,
        (1 << 24) + 1,
        (1 << 24) + 3,
        65519,
        65520,
        -65520,
        i64::MIN as i128,
        i64::MAX as i128,
        // One rounding: 2^60 + 2^37. Through f64 first it would be 2^60.
        (1 << 60) + (1 << 36) + 1,
        -((1 << 60) + (1 << 36) + 1),
        (1 << 53) + 1,
    ];
    let mut out: Vec<V> = match dtype {
        DType::Bool | DType::U32 | DType::I32 | DType::I64 => int_edges.iter().map(|&x| V::I(wrap(x, dtype))).collect(),
        _ => float_edges.iter().map(|&x| V::F(round_to(fmt_of(dtype), x))).collect(),
    };
    while out.len() < n {
        let r = rng.next();
        let v = match dtype {
            DType::Bool => V::I((r & 1) as i128),
            DType::U32 | DType::I32 | DType::I64 => {
                if r & 1 == 0 {
                    V::I(wrap((r >> 1) as i128 * if r & 2 == 0 { 1 } else { -1 }, dtype))
                } else {
                    V::I(wrap(rng.range(-7e4, 7e4) as i128, dtype))
                }
            }
            DType::F16 => V::F(f16::from_bits(r as u16).to_f64()),
            DType::BF16 => V::F(bf16::from_bits(r as u16).to_f64()),
            DType::F32 => match r % 3 {
                0 => V::F(f32::from_bits((r >> 8) as u32) as f64),
                1 => V::F(rng.range(-5e9, 5e9) as f32 as f64),
                _ => V::F(rng.range(-70000.0, 70000.0) as f32 as f64),
            },
            DType::F64 => match r % 3 {
                0 => V::F(f64::from_bits(rng.next())),
                1 => V::F(rng.range(-2e19, 2e19)),
                _ => V::F(rng.range(-70000.0, 70000.0)),
            },
        };
        out.push(v);
    }
    out
}

fn cast_case(sources: &[DType], seed: u64) {
    for &from in sources {
        let vals = cast_sources(&mut Rng(seed ^ from.code() as u64), from);
        let n = vals.len();
        for dev in devices() {
            if !runs(dev, from) {
                continue;
            }
            let mut fails = Vec::new();
            on(dev, || {
                let src = if from.is_float() {
                    floats(
                        &vals.iter().map(|v| if let V::F(x) = v { *x } else { 0.0 }).collect::<Vec<_>>(),
                        &[n],
                        from,
                    )?
                } else {
                    ints(&vals.iter().map(|v| if let V::I(x) = v { *x } else { 0 }).collect::<Vec<_>>(), &[n], from)?
                };
                for to in DType::ALL {
                    if !runs(dev, to) {
                        continue;
                    }
                    let r = src.astype(to)?;
                    let got: Vec<V> = if to.is_float() {
                        to_f64s(&r)?.into_iter().map(V::F).collect()
                    } else {
                        to_i128s(&r)?.into_iter().map(V::I).collect()
                    };
                    for (i, (&v, &g)) in vals.iter().zip(&got).enumerate() {
                        let w = cast_ref(v, to);
                        // The GPU may see a subnormal source as zero.
                        let flush = |v: V| match v {
                            V::F(x) if is_gpu(dev) => V::F(flushed(fmt_of(from), x)),
                            other => other,
                        };
                        if !same_value(g, w) && !same_value(g, cast_ref(flush(v), to)) {
                            fails.push(format!("[{i}] astype {from} -> {to} of {v:?} = {g:?}, want {w:?}"));
                        }
                    }
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("astype from {from} on {dev}: {e}"));
            fail_if_any(&format!("astype from {from}"), dev, &fails);
        }
    }
}

proptest! {
    #![proptest_config(config(8))]

    /// Conversions from the dtypes every device has (and bf16 on the CPU) to all others.
    #[test]
    fn astype_from_32bit_and_narrower(seed in any::<u64>()) {
        cast_case(&[DType::Bool, DType::U32, DType::I32, DType::F32, DType::F16, DType::BF16], seed);
    }

    /// Conversions from i64 and f64 (CPU only) to all dtypes.
    #[test]
    fn astype_from_64bit(seed in any::<u64>()) {
        cast_case(&[DType::I64, DType::F64], seed);
    }
}

// ---------------------------------------------------------------------------------------
// Views for reductions and scans: a base array sliced with a step per axis, then permuted.

#[derive(Debug, Clone)]
struct ViewSpec {
    base: Vec<usize>,
    steps: Vec<isize>,
    perm: Vec<usize>,
}

fn view_strategy(min_ndim: usize, max_ndim: usize) -> impl Strategy<Value = ViewSpec> {
    (prop::collection::vec(1usize..=5, min_ndim..=max_ndim), any::<bool>())
        .prop_flat_map(|(base, strided)| {
            let n = base.len();
            let steps = prop::collection::vec(prop::sample::select(vec![1isize, 1, 2, -1, -2, 3]), n);
            (Just(base), Just(strided), steps, Just((0..n).collect::<Vec<usize>>()).prop_shuffle())
        })
        .prop_map(|(base, strided, steps, perm)| {
            if strided {
                ViewSpec { base, steps, perm }
            } else {
                let n = base.len();
                ViewSpec { base, steps: vec![1; n], perm: (0..n).collect() }
            }
        })
}

impl ViewSpec {
    /// Positions each base axis keeps, in view order (Python's `[::step]`).
    fn kept(&self) -> Vec<Vec<usize>> {
        self.base
            .iter()
            .zip(&self.steps)
            .map(|(&n, &s)| {
                if s > 0 { (0..n).step_by(s as usize).collect() } else { (0..n).rev().step_by((-s) as usize).collect() }
            })
            .collect()
    }

    fn shape(&self) -> Vec<usize> {
        let k = self.kept();
        self.perm.iter().map(|&p| k[p].len()).collect()
    }

    /// The view's elements in row-major order.
    fn apply<T: Copy>(&self, data: &[T]) -> Vec<T> {
        let (k, shape) = (self.kept(), self.shape());
        let nd = self.base.len();
        let mut strides = vec![1; nd];
        for d in (0..nd.saturating_sub(1)).rev() {
            strides[d] = strides[d + 1] * self.base[d + 1];
        }
        (0..numel(&shape))
            .map(|i| {
                let idx = unravel(i, &shape);
                data[(0..nd).map(|j| k[self.perm[j]][idx[j]] * strides[self.perm[j]]).sum::<usize>()]
            })
            .collect()
    }

    fn build(&self, a: &Array) -> Result<Array> {
        let args: Vec<SliceArg> = self.steps.iter().map(|&s| SliceArg::new(None, None, s)).collect();
        let perm: Vec<isize> = self.perm.iter().map(|&p| p as isize).collect();
        a.slice(&args)?.transpose(&perm)
    }
}

/// The elements of each output position of a reduction over `axes` (sorted), in output
/// order; within a group, in row-major order.
fn groups<T: Copy>(data: &[T], shape: &[usize], axes: &[usize]) -> Vec<Vec<T>> {
    let keep: Vec<usize> = (0..shape.len()).filter(|d| !axes.contains(d)).collect();
    let out: Vec<usize> = keep.iter().map(|&d| shape[d]).collect();
    let mut g = vec![Vec::new(); numel(&out)];
    for (i, &x) in data.iter().enumerate() {
        let idx = unravel(i, shape);
        g[ravel(&keep.iter().map(|&d| idx[d]).collect::<Vec<_>>(), &out)].push(x);
    }
    g
}

fn reduced_shape(shape: &[usize], axes: &[usize], keepdims: bool) -> Vec<usize> {
    (0..shape.len()).filter_map(|d| if axes.contains(&d) { keepdims.then_some(1) } else { Some(shape[d]) }).collect()
}

/// Axes picked by `mask` (all when none is), and how to pass them (negative if `neg`).
fn pick_axes(mask: &[bool], ndim: usize, neg: bool) -> (Vec<usize>, Vec<isize>) {
    let axes: Vec<usize> = (0..ndim).filter(|&d| mask[d]).collect();
    let arg: Vec<isize> = axes.iter().map(|&d| if neg { d as isize - ndim as isize } else { d as isize }).collect();
    (if axes.is_empty() { (0..ndim).collect() } else { axes }, arg)
}

fn first_arg(g: &[f64], better: fn(f64, f64) -> bool) -> i128 {
    let mut best = 0;
    for (i, &x) in g.iter().enumerate() {
        if better(x, g[best]) {
            best = i;
        }
    }
    best as i128
}

const EPS32: f64 = 1.0 / (1u64 << 23) as f64;

#[derive(Debug, Clone)]
struct ReduceArgs {
    view: ViewSpec,
    mask: Vec<bool>,
    neg: bool,
    keepdims: bool,
    arg_axis: usize,
    seed: u64,
}

fn reduce_args() -> impl Strategy<Value = ReduceArgs> {
    (
        view_strategy(1, 4),
        prop::collection::vec(any::<bool>(), 4),
        any::<bool>(),
        any::<bool>(),
        0usize..4,
        any::<u64>(),
    )
        .prop_map(|(view, mask, neg, keepdims, arg_axis, seed)| ReduceArgs {
            view,
            mask,
            neg,
            keepdims,
            arg_axis,
            seed,
        })
}

/// Float reductions of a view of `base` against f64 references.
fn reduce_float_case(r: &ReduceArgs, dtype: DType, quantized: bool, nan: bool) {
    let f = fmt_of(dtype);
    let eps = if dtype == DType::F64 { pow2(-52) } else { EPS32 };
    let mut rng = Rng(r.seed);
    let n = numel(&r.view.base);
    let mut base: Vec<f64> = (0..n)
        .map(|_| if quantized { (rng.below(33) as f64 - 16.0) / 4.0 } else { rng.range(-3.0, 3.0) as f32 as f64 })
        .collect();
    if nan {
        base[rng.below(n)] = f64::NAN;
    }
    let base = held(base, dtype);
    let data = r.view.apply(&base);
    let shape = r.view.shape();
    let (axes, arg) = pick_axes(&r.mask, shape.len(), r.neg);
    let gs = groups(&data, &shape, &axes);
    let out = reduced_shape(&shape, &axes, r.keepdims);
    let ax = r.arg_axis % shape.len();
    let ags = groups(&data, &shape, &[ax]);
    let sum = |g: &[f64]| g.iter().sum::<f64>();
    let abs_sum = |g: &[f64]| g.iter().map(|x| x.abs()).sum::<f64>();
    // The host-side inputs of prod: 1 + x/16, exact in every dtype for quantized data.
    let pbase = held(base.iter().map(|&x| round_to(f, 1.0 + round_to(f, x * 0.0625))).collect(), dtype);
    let pgs = groups(&r.view.apply(&pbase), &shape, &axes);
    for dev in devices() {
        if !runs(dev, dtype) {
            continue;
        }
        let gpu = is_gpu(dev);
        let mut fails = Vec::new();
        let check = |fails: &mut Vec<String>,
                     what: &str,
                     a: &Array,
                     want: &[f64],
                     tols: &[Tol],
                     want_shape: &[usize]|
         -> Result<()> {
            assert_eq!(a.shape(), want_shape, "{what} {dtype} on {dev}: shape");
            for (i, (g, &w)) in to_f64s(a)?.into_iter().zip(want).enumerate() {
                if !close(f, g, w, tols[i], gpu) {
                    fails.push(format!("[{i}] {what} = {g:e}, want {w:e} ({:?})", tols[i]));
                }
            }
            Ok(())
        };
        on(dev, || {
            let v = r.view.build(&floats(&base, &r.view.base, dtype)?)?;
            let cnt = |g: &[f64]| g.len() as f64;
            let sum_tol: Vec<Tol> = gs.iter().map(|g| Tol { ulps: 1.0, abs: cnt(g) * eps * abs_sum(g) }).collect();
            let s: Vec<f64> = gs.iter().map(|g| sum(g)).collect();
            check(&mut fails, "sum", &v.sum(&arg, r.keepdims)?, &s, &sum_tol, &out)?;
            let m: Vec<f64> = gs.iter().map(|g| sum(g) / cnt(g)).collect();
            let mean_tol: Vec<Tol> =
                gs.iter().map(|g| Tol { ulps: 2.0, abs: cnt(g) * eps * abs_sum(g) / cnt(g) }).collect();
            check(&mut fails, "mean", &v.mean(&arg, r.keepdims)?, &m, &mean_tol, &out)?;
            let mx: Vec<f64> = gs.iter().map(|g| g.iter().fold(f64::NEG_INFINITY, |a, &x| nan_max(a, x))).collect();
            let mn: Vec<f64> = gs.iter().map(|g| g.iter().fold(f64::INFINITY, |a, &x| nan_min(a, x))).collect();
            check(&mut fails, "max", &v.max(&arg, r.keepdims)?, &mx, &vec![EXACT; mx.len()], &out)?;
            check(&mut fails, "min", &v.min(&arg, r.keepdims)?, &mn, &vec![EXACT; mn.len()], &out)?;
            if dtype == DType::F16 {
                return Ok(());
            }
            let pv = r.view.build(&floats(&pbase, &r.view.base, dtype)?)?;
            let p: Vec<f64> = pgs.iter().map(|g| g.iter().product()).collect();
            let ptol: Vec<Tol> = pgs.iter().map(|g| ulps(2.0 * cnt(g) + 1.0)).collect();
            check(&mut fails, "prod", &pv.prod(&arg, r.keepdims)?, &p, &ptol, &out)?;
            for ddof in [0usize, 1] {
                let var: Vec<f64> = gs
                    .iter()
                    .map(|g| {
                        let mu = sum(g) / cnt(g);
                        g.iter().map(|x| (x - mu) * (x - mu)).sum::<f64>() / (cnt(g) - ddof as f64)
                    })
                    .collect();
                let vtol: Vec<Tol> = gs
                    .iter()
                    .map(|g| {
                        let sq: f64 = g.iter().map(|x| x * x).sum();
                        Tol { ulps: 4.0, abs: 4.0 * (cnt(g) + 1.0) * eps * sq / (cnt(g) - ddof as f64).max(1.0) }
                    })
                    .collect();
                check(&mut fails, &format!("var ddof={ddof}"), &v.var(&arg, r.keepdims, ddof)?, &var, &vtol, &out)?;
            }
            let lse: Vec<f64> = gs
                .iter()
                .map(|g| {
                    let m = g.iter().fold(f64::NEG_INFINITY, |a, &x| nan_max(a, x));
                    m + g.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
                })
                .collect();
            let ltol: Vec<Tol> = gs.iter().map(|g| Tol { ulps: 4.0, abs: (cnt(g) + 8.0) * 4.0 * eps }).collect();
            check(&mut fails, "logsumexp", &v.logsumexp(&arg, r.keepdims)?, &lse, &ltol, &out)?;
            let bools = |fails: &mut Vec<String>, what: &str, a: Array, want: Vec<bool>| -> Result<()> {
                assert_eq!(a.shape(), &out[..], "{what}: shape");
                for (i, (g, w)) in to_i128s(&a)?.into_iter().zip(want).enumerate() {
                    if (g != 0) != w {
                        fails.push(format!("[{i}] {what} = {g}, want {w}"));
                    }
                }
                Ok(())
            };
            bools(
                &mut fails,
                "all",
                v.all(&arg, r.keepdims)?,
                gs.iter().map(|g| g.iter().all(|&x| x != 0.0)).collect(),
            )?;
            bools(
                &mut fails,
                "any",
                v.any(&arg, r.keepdims)?,
                gs.iter().map(|g| g.iter().any(|&x| x != 0.0)).collect(),
            )?;
            let aout = reduced_shape(&shape, &[ax], r.keepdims);
            // NaN counts as largest (argmax's doc); argmin says nothing of NaN.
            let amax: Vec<i128> =
                ags.iter().map(|g| first_arg(g, |x, b| !b.is_nan() && (x.is_nan() || x > b))).collect();
            let mut args = vec![("argmax", v.argmax(ax as isize, r.keepdims)?, amax)];
            if !nan {
                let amin: Vec<i128> = ags.iter().map(|g| first_arg(g, |x, b| x < b)).collect();
                args.push(("argmin", v.argmin(ax as isize, r.keepdims)?, amin));
            }
            for (what, a, want) in args {
                assert_eq!(a.shape(), &aout[..], "{what}: shape");
                if to_i128s(&a)? != want {
                    fails.push(format!("{what} axis {ax} = {:?}, want {want:?}", to_i128s(&a)?));
                }
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("reductions {dtype} on {dev}: {e}"));
        fail_if_any(&format!("reductions {dtype} of {r:?} (axes {arg:?})"), dev, &fails);
    }
}

fn nan_max(a: f64, x: f64) -> f64 {
    if a.is_nan() || x.is_nan() { f64::NAN } else { a.max(x) }
}

fn nan_min(a: f64, x: f64) -> f64 {
    if a.is_nan() || x.is_nan() { f64::NAN } else { a.min(x) }
}

/// Integer reductions: sum and prod wrap, max/min/argmax/argmin exact, mean is f32.
fn reduce_int_case(r: &ReduceArgs, dtype: DType) {
    let mut rng = Rng(r.seed);
    let base = int_values(&mut rng, numel(&r.view.base), dtype);
    let data = r.view.apply(&base);
    let shape = r.view.shape();
    let (axes, arg) = pick_axes(&r.mask, shape.len(), r.neg);
    let gs = groups(&data, &shape, &axes);
    let out = reduced_shape(&shape, &axes, r.keepdims);
    let ax = r.arg_axis % shape.len();
    let ags = groups(&data, &shape, &[ax]);
    for dev in devices() {
        if !runs(dev, dtype) {
            continue;
        }
        let mut fails = Vec::new();
        on(dev, || {
            let v = r.view.build(&ints(&base, &r.view.base, dtype)?)?;
            let exact: [(&str, Array, Vec<i128>); 6] = [
                (
                    "sum",
                    v.sum(&arg, r.keepdims)?,
                    gs.iter().map(|g| wrap(g.iter().fold(0, |a, &x| wrap(a + x, dtype)), dtype)).collect(),
                ),
                (
                    "prod",
                    v.prod(&arg, r.keepdims)?,
                    gs.iter().map(|g| g.iter().fold(1, |a, &x| wrap(a * x, dtype))).collect(),
                ),
                ("max", v.max(&arg, r.keepdims)?, gs.iter().map(|g| *g.iter().max().unwrap()).collect()),
                ("min", v.min(&arg, r.keepdims)?, gs.iter().map(|g| *g.iter().min().unwrap()).collect()),
                ("all", v.all(&arg, r.keepdims)?, gs.iter().map(|g| g.iter().all(|&x| x != 0) as i128).collect()),
                ("any", v.any(&arg, r.keepdims)?, gs.iter().map(|g| g.iter().any(|&x| x != 0) as i128).collect()),
            ];
            for (what, a, want) in exact {
                assert_eq!(a.shape(), &out[..], "{what}: shape");
                let got = to_i128s(&a)?;
                if got != want {
                    fails.push(format!("{what} = {got:?}, want {want:?}"));
                }
            }
            let aout = reduced_shape(&shape, &[ax], r.keepdims);
            let first = |g: &Vec<i128>, better: fn(i128, i128) -> bool| {
                (0..g.len()).fold(0usize, |b, i| if better(g[i], g[b]) { i } else { b }) as i128
            };
            for (what, a, want) in [
                (
                    "argmax",
                    v.argmax(ax as isize, r.keepdims)?,
                    ags.iter().map(|g| first(g, |x, b| x > b)).collect::<Vec<_>>(),
                ),
                ("argmin", v.argmin(ax as isize, r.keepdims)?, ags.iter().map(|g| first(g, |x, b| x < b)).collect()),
            ] {
                assert_eq!(a.shape(), &aout[..], "{what}: shape");
                let got = to_i128s(&a)?;
                if got != want {
                    fails.push(format!("{what} axis {ax} = {got:?}, want {want:?}"));
                }
            }
            let mean = v.mean(&arg, r.keepdims)?;
            assert_eq!((mean.shape(), mean.dtype()), (&out[..], DType::F32), "mean of {dtype}");
            for (i, (g, grp)) in to_f64s(&mean)?.into_iter().zip(&gs).enumerate() {
                let n = grp.len() as f64;
                let want = grp.iter().map(|&x| x as f64).sum::<f64>() / n;
                // Each element is rounded to f32 first, then summed in f32.
                let tol =
                    Tol { ulps: 2.0, abs: (n + 1.0) * EPS32 * grp.iter().map(|&x| (x as f64).abs()).sum::<f64>() / n };
                if !close(fmt_of(DType::F32), g, want, tol, false) {
                    fails.push(format!("[{i}] mean = {g:e}, want {want:e} of {grp:?}"));
                }
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("reductions {dtype} on {dev}: {e}"));
        fail_if_any(&format!("reductions {dtype} of {r:?} (axes {arg:?})"), dev, &fails);
    }
}

proptest! {
    #![proptest_config(config(24))]

    #[test]
    fn reduce_f32(r in reduce_args(), quantized in any::<bool>(), nan in prop::bool::weighted(0.2)) {
        reduce_float_case(&r, DType::F32, quantized, nan);
    }

    /// f16 (accumulating in f32) where the device has it, f64 on the CPU.
    #[test]
    fn reduce_f16_f64(r in reduce_args(), quantized in any::<bool>()) {
        reduce_float_case(&r, DType::F16, quantized, false);
        reduce_float_case(&r, DType::F64, quantized, false);
    }

    #[test]
    fn reduce_int(r in reduce_args()) {
        for dtype in [DType::I32, DType::U32, DType::I64] {
            reduce_int_case(&r, dtype);
        }
    }
}

/// f16 sums and means accumulate in f32: 20,000 ones sum to 20,000 (f16 partial sums stall
/// at 2048), partial sums of ±40,000 stay finite, and a mean of 20,000 tens is 10.
#[test]
fn f16_reductions_accumulate_in_f32() {
    let n = 20_000;
    let ones = vec![1.0; n];
    let pm: Vec<f64> = (0..n).map(|i| if i % 4 < 2 { 40_000.0 } else { -40_000.0 }).collect();
    let tens = vec![10.0; n];
    for dev in devices() {
        if !runs(dev, DType::F16) {
            continue;
        }
        let got = on(dev, || {
            Ok([
                to_f64s(&floats(&ones, &[n], DType::F16)?.sum(&[], false)?)?[0],
                to_f64s(&floats(&pm, &[n], DType::F16)?.sum(&[], false)?)?[0],
                to_f64s(&floats(&tens, &[n], DType::F16)?.mean(&[], false)?)?[0],
                to_f64s(&floats(&tens, &[4, n / 4], DType::F16)?.transpose(&[1, 0])?.mean(&[1], false)?)?[0],
            ])
        })
        .unwrap_or_else(|e| panic!("f16 reductions on {dev}: {e}"));
        assert_eq!(
            got,
            [20_000.0, 0.0, 10.0, 10.0],
            "f16 sum(ones), sum(±40000), mean(tens), mean over a view on {dev}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Scans.

fn scan_ref<T: Copy>(data: &[T], shape: &[usize], axis: usize, reverse: bool, f: impl Fn(T, T) -> T) -> Vec<T> {
    (0..data.len())
        .map(|i| {
            let idx = unravel(i, shape);
            let at = |j: usize| {
                let mut k = idx.clone();
                k[axis] = j;
                data[ravel(&k, shape)]
            };
            let (lo, hi) = if reverse { (idx[axis], shape[axis] - 1) } else { (0, idx[axis]) };
            if reverse {
                (lo..hi).rev().fold(at(hi), |acc, j| f(acc, at(j)))
            } else {
                (lo + 1..=hi).fold(at(lo), |acc, j| f(acc, at(j)))
            }
        })
        .collect()
}

type ScanOp = fn(&Array, isize, bool) -> Result<Array>;

const SCANS: [(&str, ScanOp); 4] = [
    ("cumsum", |a, ax, r| a.cumsum(ax, r)),
    ("cumprod", |a, ax, r| a.cumprod(ax, r)),
    ("cummax", |a, ax, r| a.cummax(ax, r)),
    ("cummin", |a, ax, r| a.cummin(ax, r)),
];

fn scan_case(view: &ViewSpec, axis: usize, neg: bool, reverse: bool, seed: u64) {
    let shape = view.shape();
    let ax = axis % shape.len();
    let arg = if neg { ax as isize - shape.len() as isize } else { ax as isize };
    let mut rng = Rng(seed);
    let n = numel(&view.base);
    // Quantized f32 (sums exact); cumprod on 1 + x/16.
    let base: Vec<f64> = (0..n).map(|_| (rng.below(33) as f64 - 16.0) / 4.0).collect();
    let pbase: Vec<f64> = base.iter().map(|x| 1.0 + x / 16.0).collect();
    let ibase = int_values(&mut rng, n, DType::I32);
    let (data, pdata, idata) = (view.apply(&base), view.apply(&pbase), view.apply(&ibase));
    let f = fmt_of(DType::F32);
    let len = shape[ax] as f64;
    for dev in devices() {
        let mut fails = Vec::new();
        on(dev, || {
            let v = view.build(&floats(&base, &view.base, DType::F32)?)?;
            let pv = view.build(&floats(&pbase, &view.base, DType::F32)?)?;
            let iv = view.build(&ints(&ibase, &view.base, DType::I32)?)?;
            for (name, op) in SCANS {
                let (input, d, want, tol): (&Array, &[f64], Vec<f64>, Tol) = match name {
                    "cumsum" => (&v, &data, scan_ref(&data, &shape, ax, reverse, |a, b| a + b), EXACT),
                    "cumprod" => (&pv, &pdata, scan_ref(&pdata, &shape, ax, reverse, |a, b| a * b), ulps(2.0 * len)),
                    "cummax" => (&v, &data, scan_ref(&data, &shape, ax, reverse, f64::max), EXACT),
                    _ => (&v, &data, scan_ref(&data, &shape, ax, reverse, f64::min), EXACT),
                };
                let r = op(input, arg, reverse)?;
                assert_eq!(r.shape(), &shape[..], "{name}: shape");
                for (i, (g, w)) in to_f64s(&r)?.into_iter().zip(want).enumerate() {
                    if !close(f, g, w, tol, false) {
                        fails.push(format!(
                            "[{i}] {name} f32 axis {arg} reverse {reverse} = {g:e}, want {w:e} (input {d:?})"
                        ));
                    }
                }
                let iwant = match name {
                    "cumsum" => scan_ref(&idata, &shape, ax, reverse, |a, b| wrap(a + b, DType::I32)),
                    "cumprod" => scan_ref(&idata, &shape, ax, reverse, |a, b| wrap(a * b, DType::I32)),
                    "cummax" => scan_ref(&idata, &shape, ax, reverse, i128::max),
                    _ => scan_ref(&idata, &shape, ax, reverse, i128::min),
                };
                let r = op(&iv, arg, reverse)?;
                assert_eq!((r.shape(), r.dtype()), (&shape[..], DType::I32), "{name} i32");
                let got = to_i128s(&r)?;
                if got != iwant {
                    fails.push(format!(
                        "{name} i32 axis {arg} reverse {reverse} = {got:?}, want {iwant:?} (input {idata:?})"
                    ));
                }
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("scans on {dev}: {e}"));
        fail_if_any(&format!("scans of {view:?}"), dev, &fails);
    }
}

proptest! {
    #![proptest_config(config(24))]

    /// cumsum (exact on quantized values; i32 wraps), cumprod, cummax, cummin along a random
    /// axis of a contiguous or strided view, forwards and reversed.
    #[test]
    fn scans(
        view in view_strategy(1, 3),
        axis in 0usize..3,
        neg in any::<bool>(),
        reverse in any::<bool>(),
        seed in any::<u64>(),
    ) {
        scan_case(&view, axis, neg, reverse, seed);
    }
}

/// A scan of a 0-d array is a scan of its 1-element flattening (NumPy: `np.cumsum(np.array(3.0),
/// axis=0)` is `array([3.])`).
#[test]
fn scans_of_0d() {
    for dev in devices() {
        for (name, op) in SCANS {
            for axis in [0, -1] {
                let got = on(dev, || {
                    let r = op(&Array::scalar(3.0f32)?, axis, false)?;
                    Ok((r.shape().to_vec(), r.to_vec::<f32>()?))
                })
                .unwrap_or_else(|e| panic!("{name} of a 0-d array, axis {axis}, on {dev}: {e}"));
                assert_eq!(got, (vec![1], vec![3.0]), "{name} of a 0-d array, axis {axis}, on {dev}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Indexing.

/// The position a read at index `v` takes along an axis of length `n`: negative counts
/// from the end, then clamps (the documented `mode="clip"`).
fn clip_index(v: i128, n: usize) -> usize {
    let v = if v < 0 { v + n as i128 } else { v };
    v.clamp(0, n as i128 - 1) as usize
}

/// The position a scatter at index `v` writes: negative counts from the end; out of range
/// is dropped.
fn drop_index(v: i128, n: usize) -> Option<usize> {
    let v = if v < 0 { v + n as i128 } else { v };
    (0..n as i128).contains(&v).then_some(v as usize)
}

fn index_values(rng: &mut Rng, count: usize, n: usize, dtype: DType) -> Vec<i128> {
    let n = n as i128;
    let edges: Vec<i128> = match dtype {
        DType::I32 => vec![i32::MIN as i128, i32::MAX as i128, -n - 1, n, -n],
        DType::U32 => vec![u32::MAX as i128, 1 << 31, n],
        DType::I64 => {
            vec![i64::MIN as i128, i64::MAX as i128, (1 << 31) + 1, (1 << 32) + 1, -(1 << 31) - 1, 1 << 40, -n - 1]
        }
        _ => unreachable!(),
    };
    (0..count)
        .map(|_| {
            if rng.below(4) == 0 {
                edges[rng.below(edges.len())]
            } else {
                let v = rng.below(4 * n as usize + 5) as i128 - 2 * n - 2;
                if dtype == DType::U32 { v.abs() } else { v }
            }
        })
        .collect()
}

#[derive(Debug, Clone)]
struct TakeArgs {
    src: Vec<usize>,
    axis: Option<usize>,
    idx_shape: Vec<usize>,
    seed: u64,
}

fn take_args() -> impl Strategy<Value = TakeArgs> {
    (
        prop::collection::vec(1usize..=4, 1..=3),
        prop::option::of(0usize..3),
        prop::collection::vec(0usize..=4, 0..=2),
        any::<u64>(),
    )
        .prop_map(|(src, axis, idx_shape, seed)| TakeArgs {
            axis: axis.map(|a| a % src.len()),
            src,
            idx_shape,
            seed,
        })
}

fn take_case(t: &TakeArgs, dtypes: &[DType]) {
    let mut rng = Rng(t.seed);
    let data: Vec<f64> = (0..numel(&t.src)).map(|i| i as f64).collect();
    let (src_shape, ax) = match t.axis {
        None => (vec![numel(&t.src)], 0),
        Some(a) => (t.src.clone(), a),
    };
    let n = src_shape[ax];
    for &dtype in dtypes {
        let idx = index_values(&mut rng, numel(&t.idx_shape), n, dtype);
        let mut out = src_shape[..ax].to_vec();
        out.extend_from_slice(&t.idx_shape);
        out.extend_from_slice(&src_shape[ax + 1..]);
        let (pre, post) = (&src_shape[..ax], &src_shape[ax + 1..]);
        let want: Vec<f64> = (0..numel(&out))
            .map(|i| {
                let o = unravel(i, &out);
                let k = t.idx_shape.len();
                let mut s = o[..ax].to_vec();
                s.push(clip_index(idx[ravel(&o[ax..ax + k], &t.idx_shape)], n));
                s.extend_from_slice(&o[ax + k..]);
                let _ = (pre, post);
                data[ravel(&s, &src_shape)]
            })
            .collect();
        for dev in devices() {
            if !runs(dev, dtype) {
                continue;
            }
            let got = on(dev, || {
                let a = floats(&data, &t.src, DType::F32)?;
                let r = a.take(&ints(&idx, &t.idx_shape, dtype)?, t.axis.map(|a| a as isize))?;
                assert_eq!(r.shape(), &out[..], "take: shape");
                to_f64s(&r)
            })
            .unwrap_or_else(|e| panic!("take {dtype} on {dev}: {e}"));
            assert_eq!(got, want, "take of {t:?} with {dtype} indices {idx:?} on {dev}");
        }
    }
}

#[derive(Debug, Clone)]
struct AlongArgs {
    shape: Vec<usize>,
    axis: usize,
    m: usize,
    seed: u64,
}

fn along_args() -> impl Strategy<Value = AlongArgs> {
    (prop::collection::vec(1usize..=4, 1..=3), 0usize..3, 1usize..=4, any::<u64>())
        .prop_map(|(shape, axis, m, seed)| AlongArgs { axis: axis % shape.len(), shape, m, seed })
}

impl AlongArgs {
    fn idx_shape(&self) -> Vec<usize> {
        let mut s = self.shape.clone();
        s[self.axis] = self.m;
        s
    }
}

fn take_along_case(t: &AlongArgs) {
    let mut rng = Rng(t.seed);
    let data: Vec<f64> = (0..numel(&t.shape)).map(|i| i as f64).collect();
    let is = t.idx_shape();
    let n = t.shape[t.axis];
    let idx = index_values(&mut rng, numel(&is), n, DType::I32);
    let want: Vec<f64> = (0..numel(&is))
        .map(|i| {
            let mut s = unravel(i, &is);
            s[t.axis] = clip_index(idx[i], n);
            data[ravel(&s, &t.shape)]
        })
        .collect();
    for dev in devices() {
        let got = on(dev, || {
            let r =
                floats(&data, &t.shape, DType::F32)?.take_along_axis(&ints(&idx, &is, DType::I32)?, t.axis as isize)?;
            to_f64s(&r)
        })
        .unwrap_or_else(|e| panic!("take_along_axis on {dev}: {e}"));
        assert_eq!(got, want, "take_along_axis of {t:?} with indices {idx:?} on {dev}");
    }
}

/// scatter: every written position holds one of the updates aimed at it (which one wins is
/// unspecified), the rest keep their value; scatter_add sums them, wrapping for integers.
fn scatter_case(t: &AlongArgs, dtype: DType) {
    let mut rng = Rng(t.seed);
    let is = t.idx_shape();
    let n = t.shape[t.axis];
    let dst: Vec<i128> = if dtype == DType::F32 {
        (0..numel(&t.shape)).map(|i| i as i128).collect()
    } else {
        int_values(&mut rng, numel(&t.shape), dtype)
    };
    let upd: Vec<i128> = if dtype == DType::F32 {
        (0..numel(&is)).map(|_| rng.below(200) as i128 - 100).collect()
    } else {
        // Large values, so that sums overflow and must wrap.
        (0..numel(&is)).map(|_| wrap(i32::MAX as i128 - rng.below(1000) as i128, dtype)).collect()
    };
    let idx = index_values(&mut rng, numel(&is), n + 1, DType::I32);
    let mut hits: Vec<Vec<i128>> = vec![Vec::new(); dst.len()];
    for (i, &v) in idx.iter().enumerate() {
        if let Some(p) = drop_index(v, n) {
            let mut s = unravel(i, &is);
            s[t.axis] = p;
            hits[ravel(&s, &t.shape)].push(upd[i]);
        }
    }
    let add_want: Vec<i128> = dst
        .iter()
        .zip(&hits)
        .map(|(&d, h)| h.iter().fold(d, |a, &u| if dtype == DType::F32 { a + u } else { wrap(a + u, dtype) }))
        .collect();
    for dev in devices() {
        let (set, add) = on(dev, || {
            let mk = |v: &[i128], s: &[usize]| {
                if dtype == DType::F32 {
                    floats(&v.iter().map(|&x| x as f64).collect::<Vec<_>>(), s, dtype)
                } else {
                    ints(v, s, dtype)
                }
            };
            let (d, i, u) = (mk(&dst, &t.shape)?, ints(&idx, &is, DType::I32)?, mk(&upd, &is)?);
            let get = |a: Array| -> Result<Vec<i128>> {
                if dtype == DType::F32 {
                    Ok(to_f64s(&a)?.into_iter().map(|x| x as i128).collect())
                } else {
                    to_i128s(&a)
                }
            };
            Ok((get(d.scatter(&i, &u, t.axis as isize)?)?, get(d.scatter_add(&i, &u, t.axis as isize)?)?))
        })
        .unwrap_or_else(|e| panic!("scatter {dtype} on {dev}: {e}"));
        for (p, (&g, h)) in set.iter().zip(&hits).enumerate() {
            let ok = if h.is_empty() { g == dst[p] } else { h.contains(&g) };
            assert!(
                ok,
                "scatter {dtype} of {t:?} indices {idx:?} on {dev}: [{p}] = {g}, want one of {h:?} (or {})",
                dst[p]
            );
        }
        assert_eq!(add, add_want, "scatter_add {dtype} of {t:?} indices {idx:?} updates {upd:?} on {dev}");
    }
}

fn tri_ref(x: &[f64], shape: &[usize], k: isize, upper: bool) -> Vec<f64> {
    let (m, n) = (shape[shape.len() - 2], shape[shape.len() - 1]);
    x.iter()
        .enumerate()
        .map(|(i, &v)| {
            let (r, c) = ((i / n) % m, i % n);
            let d = c as isize - r as isize;
            if (upper && d >= k) || (!upper && d <= k) { v } else { 0.0 }
        })
        .collect()
}

fn tri_case(shape: &[usize], k: isize) {
    let data: Vec<f64> = (1..=numel(shape)).map(|i| i as f64).collect();
    // NumPy reads a 1-D input as the rows of a square matrix: triu([a, b]) = [[a, b], [0, b]].
    let (full, fshape) = if shape.len() == 1 {
        let n = shape[0];
        ((0..n * n).map(|i| data[i % n]).collect::<Vec<_>>(), vec![n, n])
    } else {
        (data.clone(), shape.to_vec())
    };
    for dev in devices() {
        for upper in [true, false] {
            let name = if upper { "triu" } else { "tril" };
            let got = on(dev, || {
                let a = floats(&data, shape, DType::F32)?;
                let r = if upper { a.triu(k)? } else { a.tril(k)? };
                Ok((r.shape().to_vec(), to_f64s(&r)?))
            })
            .unwrap_or_else(|e| panic!("{name} of {shape:?} k={k} on {dev}: {e}"));
            assert_eq!(got, (fshape.clone(), tri_ref(&full, &fshape, k, upper)), "{name} of {shape:?} k={k} on {dev}");
        }
    }
}

proptest! {
    #![proptest_config(config(24))]

    /// take with i32 and u32 indices (every device), out-of-range ones clamped.
    #[test]
    fn take_i32_u32(t in take_args()) {
        take_case(&t, &[DType::I32, DType::U32]);
    }

    /// take with i64 indices (beyond 2^31 too), which clamp by their i64 value.
    #[test]
    fn take_i64(t in take_args()) {
        take_case(&t, &[DType::I64]);
    }

    #[test]
    fn take_along_axis(t in along_args()) {
        take_along_case(&t);
    }

    #[test]
    fn scatter_f32(t in along_args()) {
        scatter_case(&t, DType::F32);
    }

    /// Integer scatter_add of values near i32::MAX, whose sums must wrap.
    #[test]
    fn scatter_int(t in along_args()) {
        scatter_case(&t, DType::I32);
        scatter_case(&t, DType::U32);
    }

    #[test]
    fn triu_tril(shape in prop::collection::vec(1usize..=5, 2..=3), k in -5isize..=5) {
        tri_case(&shape, k);
    }
}

#[test]
fn triu_tril_1d() {
    for n in [1, 3, 4] {
        for k in [-1, 0, 2] {
            tri_case(&[n], k);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Matmul.

#[derive(Debug, Clone)]
struct MatmulArgs {
    batch_a: Vec<usize>,
    batch_b: Vec<usize>,
    m: usize,
    k: usize,
    n: usize,
    a1d: bool,
    b1d: bool,
    seed: u64,
}

fn matmul_args() -> impl Strategy<Value = MatmulArgs> {
    (
        compatible_shapes(2, 3),
        1usize..=6,
        1usize..=9,
        1usize..=6,
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.2),
        any::<u64>(),
    )
        .prop_map(|((batch_a, batch_b), m, k, n, a1d, b1d, seed)| MatmulArgs {
            batch_a,
            batch_b,
            m,
            k,
            n,
            a1d,
            b1d,
            seed,
        })
}

fn matmul_case(t: &MatmulArgs) {
    let (ba, bb) = (if t.a1d { vec![] } else { t.batch_a.clone() }, if t.b1d { vec![] } else { t.batch_b.clone() });
    let (m, k, n) = (if t.a1d { 1 } else { t.m }, t.k, if t.b1d { 1 } else { t.n });
    let mut sa = ba.clone();
    sa.extend(if t.a1d { vec![k] } else { vec![m, k] });
    let mut sb = bb.clone();
    sb.extend(if t.b1d { vec![k] } else { vec![k, n] });
    let mut rng = Rng(t.seed);
    let a: Vec<f64> = (0..numel(&sa)).map(|_| rng.range(-1.0, 1.0) as f32 as f64).collect();
    let b: Vec<f64> = (0..numel(&sb)).map(|_| rng.range(-1.0, 1.0) as f32 as f64).collect();
    let batch = broadcast(&ba, &bb);
    let mut out = batch.clone();
    if !t.a1d {
        out.push(m);
    }
    if !t.b1d {
        out.push(n);
    }
    let (mut want, mut tol) = (Vec::new(), Vec::new());
    for bi in 0..numel(&batch) {
        let bidx = unravel(bi, &batch);
        let (oa, ob) = (bcast_index(&ba, &bidx) * m * k, bcast_index(&bb, &bidx) * k * n);
        for i in 0..m {
            for j in 0..n {
                let terms: Vec<f64> = (0..k).map(|l| a[oa + i * k + l] * b[ob + l * n + j]).collect();
                want.push(terms.iter().sum::<f64>());
                tol.push(Tol { ulps: 1.0, abs: k as f64 * EPS32 * terms.iter().map(|x| x.abs()).sum::<f64>() });
            }
        }
    }
    for dev in devices() {
        let got = on(dev, || {
            let r = floats(&a, &sa, DType::F32)?.matmul(&floats(&b, &sb, DType::F32)?)?;
            assert_eq!(r.shape(), &out[..], "matmul {sa:?} @ {sb:?}: shape");
            to_f64s(&r)
        })
        .unwrap_or_else(|e| panic!("matmul {sa:?} @ {sb:?} on {dev}: {e}"));
        let fails: Vec<String> = got
            .iter()
            .zip(&want)
            .zip(&tol)
            .enumerate()
            .filter(|(_, ((g, w), t))| !close(fmt_of(DType::F32), **g, **w, **t, false))
            .map(|(i, ((g, w), _))| format!("[{i}] {g:e}, want {w:e}"))
            .collect();
        fail_if_any(&format!("matmul {sa:?} @ {sb:?}"), dev, &fails);
    }
}

proptest! {
    #![proptest_config(config(24))]

    /// Batched matmul with broadcasting batch axes and 1-D operands, against an f64 triple loop.
    #[test]
    fn matmul(t in matmul_args()) {
        matmul_case(&t);
    }
}
