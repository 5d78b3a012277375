//! Per-element math of the CPU kernels: the float ops (f32 through the vectorising
//! [`super::math`], f64 through libm), NumPy's divmod, the inverse error function, and
//! wrapping integer arithmetic.

use super::math;
use super::storage::CpuElem;

/// Float math the kernels need, for f32 and f64. Every method is `#[inline(always)]` so
/// that it compiles inside the caller's vectorised loop.
pub(crate) trait Float: CpuElem + num_traits::Float + Sync + Send {
    /// True when `sin`, `cos` (`pow`) may return a wrong value that
    /// [`Float::trig_fast`] ([`Float::pow_fast`]) flags, for the scalar fix-up.
    const FIXUP: bool;
    fn erf(self) -> Self;
    fn erfinv(self) -> Self;
    fn round_even(self) -> Self;
    fn exp_(self) -> Self;
    fn expm1_(self) -> Self;
    fn ln_(self) -> Self;
    fn ln1p_(self) -> Self;
    fn log2_(self) -> Self;
    fn tanh_(self) -> Self;
    fn sigmoid(self) -> Self;
    fn sin_(self) -> Self;
    fn cos_(self) -> Self;
    fn pow_(self, y: Self) -> Self;
    fn trig_fast(self) -> bool;
    fn pow_fast(self, y: Self) -> bool;
}

impl Float for f32 {
    const FIXUP: bool = true;
    #[inline(always)]
    fn erf(self) -> Self {
        libm::erff(self)
    }
    /// Through f64 (accurate to a few f64 ulps), then one rounding.
    #[inline(always)]
    fn erfinv(self) -> Self {
        erfinv_f64(self as f64) as f32
    }
    #[inline(always)]
    fn round_even(self) -> Self {
        self.round_ties_even()
    }
    #[inline(always)]
    fn exp_(self) -> Self {
        math::exp(self)
    }
    #[inline(always)]
    fn expm1_(self) -> Self {
        math::expm1(self)
    }
    #[inline(always)]
    fn ln_(self) -> Self {
        math::log(self)
    }
    #[inline(always)]
    fn ln1p_(self) -> Self {
        math::log1p(self)
    }
    #[inline(always)]
    fn log2_(self) -> Self {
        math::log2(self)
    }
    #[inline(always)]
    fn tanh_(self) -> Self {
        math::tanh(self)
    }
    #[inline(always)]
    fn sigmoid(self) -> Self {
        math::sigmoid(self)
    }
    #[inline(always)]
    fn sin_(self) -> Self {
        math::sin(self)
    }
    #[inline(always)]
    fn cos_(self) -> Self {
        math::cos(self)
    }
    #[inline(always)]
    fn pow_(self, y: Self) -> Self {
        math::pow(self, y)
    }
    #[inline(always)]
    fn trig_fast(self) -> bool {
        math::sin_cos_fast_range(self)
    }
    #[inline(always)]
    fn pow_fast(self, y: Self) -> bool {
        math::pow_fast_range(self, y)
    }
}

impl Float for f64 {
    const FIXUP: bool = false;
    #[inline(always)]
    fn erf(self) -> Self {
        libm::erf(self)
    }
    #[inline(always)]
    fn erfinv(self) -> Self {
        erfinv_f64(self)
    }
    #[inline(always)]
    fn round_even(self) -> Self {
        self.round_ties_even()
    }
    #[inline(always)]
    fn exp_(self) -> Self {
        self.exp()
    }
    #[inline(always)]
    fn expm1_(self) -> Self {
        self.exp_m1()
    }
    #[inline(always)]
    fn ln_(self) -> Self {
        self.ln()
    }
    #[inline(always)]
    fn ln1p_(self) -> Self {
        self.ln_1p()
    }
    #[inline(always)]
    fn log2_(self) -> Self {
        self.log2()
    }
    #[inline(always)]
    fn tanh_(self) -> Self {
        self.tanh()
    }
    /// Split at 0 so exp never overflows.
    #[inline(always)]
    fn sigmoid(self) -> Self {
        if self >= 0.0 {
            1.0 / (1.0 + (-self).exp())
        } else {
            let e = self.exp();
            e / (1.0 + e)
        }
    }
    #[inline(always)]
    fn sin_(self) -> Self {
        self.sin()
    }
    #[inline(always)]
    fn cos_(self) -> Self {
        self.cos()
    }
    #[inline(always)]
    fn pow_(self, y: Self) -> Self {
        self.powf(y)
    }
    #[inline(always)]
    fn trig_fast(self) -> bool {
        true
    }
    #[inline(always)]
    fn pow_fast(self, _y: Self) -> bool {
        true
    }
}

/// The inverse error function: Giles' single-precision approximation ("Approximating
/// the erfinv function", GPU Computing Gems Jade, 2011; the GPU kernel uses it alone)
/// refined by Newton steps on `erf` to f64 accuracy. Near ±1 the step
/// works on `erfc`, where `1 - |x|` is exact, so the tails keep their precision.
pub(crate) fn erfinv_f64(x: f64) -> f64 {
    let a = x.abs();
    if x.is_nan() || a > 1.0 {
        return f64::NAN;
    }
    if a == 1.0 {
        return x * f64::INFINITY;
    }
    if a == 0.0 {
        return x;
    }
    let mut w = -((1.0 - a) * (1.0 + a)).ln();
    let mut y = if w < 5.0 {
        w -= 2.5;
        [
            3.43273939e-07,
            -3.5233877e-06,
            -4.39150654e-06,
            0.00021858087,
            -0.00125372503,
            -0.00417768164,
            0.246640727,
            1.50140941,
        ]
        .iter()
        .fold(2.81022636e-08, |p, &c| c + p * w)
    } else {
        w = w.sqrt() - 3.0;
        [
            0.000100950558,
            0.00134934322,
            -0.00367342844,
            0.00573950773,
            -0.0076224613,
            0.00943887047,
            1.00167406,
            2.83297682,
        ]
        .iter()
        .fold(-0.000200214257, |p, &c| c + p * w)
    } * a;
    // Newton on erf (quadratic; the start is good to ~1e-7 inside f32's range, and a few
    // more steps bring the far tails, beyond the fit, in too).
    for _ in 0..8 {
        let slope = std::f64::consts::FRAC_2_SQRT_PI * (-y * y).exp();
        if slope == 0.0 {
            break;
        }
        // erf(y) - a, written as (1 - a) - erfc(y) in the tails.
        let err = if a < 0.5 { libm::erf(y) - a } else { (1.0 - a) - libm::erfc(y) };
        let step = err / slope;
        y -= step;
        if step.abs() <= f64::EPSILON * y.abs() {
            break;
        }
    }
    y.copysign(x)
}

/// `(a // b, a % b)` as NumPy's `npy_divmod`: the remainder from the exact `fmod`, moved
/// to the divisor's sign; the quotient `(a - mod) / b` snapped to the nearest integer.
/// (`floor(a / b)` is not it: the rounded `a / b` can cross an integer, 1 // 0.1 is 9.)
pub(crate) fn divmod<F: Float>(a: F, b: F) -> (F, F) {
    let zero = F::zero();
    let signed_zero = |negative: bool| if negative { -zero } else { zero };
    let mut m = a % b;
    if b == zero {
        return (a / b, m);
    }
    let mut div = (a - m) / b;
    // NaN counts as non-zero here, as in C's `if (mod)`.
    if m != zero {
        if (b < zero) != (m < zero) {
            m = m + b;
            div = div - F::one();
        }
    } else {
        m = signed_zero(b.is_sign_negative());
    }
    let q = if div != zero {
        let fl = div.floor();
        if div - fl > F::from(0.5).expect("0.5 is representable") { fl + F::one() } else { fl }
    } else {
        signed_zero((a / b).is_sign_negative())
    };
    (q, m)
}

/// Integer math the kernels need; wrapping like NumPy, never trapping. The wrapping
/// arithmetic comes from `num_traits`; only what differs by signedness is per type.
pub(crate) trait Int:
    CpuElem
    + Ord
    + Sync
    + num_traits::Zero
    + num_traits::WrappingAdd
    + num_traits::WrappingSub
    + num_traits::WrappingMul
    + num_traits::WrappingNeg
{
    fn wadd(self, o: Self) -> Self {
        self.wrapping_add(&o)
    }
    fn wsub(self, o: Self) -> Self {
        self.wrapping_sub(&o)
    }
    fn wmul(self, o: Self) -> Self {
        self.wrapping_mul(&o)
    }
    fn wneg(self) -> Self {
        self.wrapping_neg()
    }
    fn wabs(self) -> Self;
    fn sign(self) -> Self;
    fn div_floor(self, o: Self) -> Self;
    fn rem_floor(self, o: Self) -> Self;
    fn pow_int(self, o: Self) -> Self;
}

macro_rules! int_impl {
    ($t:ty, signed) => {
        impl Int for $t {
            fn wabs(self) -> Self {
                self.wrapping_abs()
            }
            fn sign(self) -> Self {
                self.signum()
            }
            fn div_floor(self, o: Self) -> Self {
                if o == 0 {
                    return 0;
                }
                let q = self.wrapping_div(o);
                if self.wrapping_rem(o) != 0 && ((self < 0) != (o < 0)) { q - 1 } else { q }
            }
            fn rem_floor(self, o: Self) -> Self {
                if o == 0 {
                    return 0;
                }
                let r = self.wrapping_rem(o);
                if r != 0 && ((r < 0) != (o < 0)) { r + o } else { r }
            }
            fn pow_int(self, o: Self) -> Self {
                if o < 0 {
                    // NumPy refuses; we pick the value the limit suggests instead of trapping.
                    return match self {
                        1 => 1,
                        -1 => {
                            if o % 2 == 0 {
                                1
                            } else {
                                -1
                            }
                        }
                        _ => 0,
                    };
                }
                // Square and multiply over the whole exponent: std's `wrapping_pow` takes a
                // u32, and clamping an i64 exponent to one got parity (and value) wrong.
                let (mut base, mut e, mut acc) = (self, o as u64, 1 as Self);
                while e > 0 {
                    if e & 1 == 1 {
                        acc = acc.wrapping_mul(base);
                    }
                    base = base.wrapping_mul(base);
                    e >>= 1;
                }
                acc
            }
        }
    };
    ($t:ty, unsigned) => {
        impl Int for $t {
            fn wabs(self) -> Self {
                self
            }
            fn sign(self) -> Self {
                (self > 0) as $t
            }
            fn div_floor(self, o: Self) -> Self {
                if o == 0 { 0 } else { self / o }
            }
            fn rem_floor(self, o: Self) -> Self {
                if o == 0 { 0 } else { self % o }
            }
            fn pow_int(self, o: Self) -> Self {
                self.wrapping_pow(o)
            }
        }
    };
}
int_impl!(i32, signed);
int_impl!(i64, signed);
int_impl!(u32, unsigned);

#[cfg(test)]
mod tests {
    use super::Int;

    /// Known answers (Python's `pow(b, e, 2**64)` read as i64) for exponents past u32.
    #[test]
    fn integer_powers_wrap_over_the_whole_exponent() {
        assert_eq!((-1i64).pow_int(1 << 32), 1);
        assert_eq!((-1i64).pow_int((1 << 32) + 1), -1);
        assert_eq!(3i64.pow_int(1 << 32), 2491309678558969857);
        assert_eq!(3i64.pow_int((1 << 32) + 1), 7473929035676909571);
        assert_eq!(2i64.pow_int(i64::MAX), 0);
        assert_eq!(7i64.pow_int(0), 1);
        assert_eq!((-3i32).pow_int(3), -27);
        assert_eq!(3i32.pow_int(21), 3i32.wrapping_pow(21));
        assert_eq!(3u32.pow_int(40), 3u32.wrapping_pow(40));
        assert_eq!(2i32.pow_int(-1), 0);
        assert_eq!((-1i64).pow_int(-3), -1);
    }
}
