//! Elementwise kernels: unary, binary with broadcasting, select.
//!
//! f16 and bf16 compute through f32 (convert, run, convert back): the rounding is that of
//! one f32 op followed by one narrowing, which matches what the GPU's f16 path does.

use rayon::prelude::*;

use super::storage::{CpuData, CpuElem, map_data};
use super::{PAR_MIN, unsupported};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::primitive::{BinaryOp, UnaryOp};
use crate::shape::{StridedIter, broadcast_strides};

/// `f` over every element, on threads for large inputs.
pub(crate) fn map_vec<T: Copy + Sync, U: Send>(v: &[T], f: impl Fn(T) -> U + Sync + Send) -> Vec<U> {
    if v.len() >= PAR_MIN { v.par_iter().map(|&x| f(x)).collect() } else { v.iter().map(|&x| f(x)).collect() }
}

/// `f` over two inputs broadcast to `out`.
pub(crate) fn zip_map<T: Copy + Sync, U: Send>(
    a: &[T],
    sa: &[usize],
    b: &[T],
    sb: &[usize],
    out: &[usize],
    f: impl Fn(T, T) -> U + Sync + Send,
) -> Vec<U> {
    let n: usize = out.iter().product();
    if sa == out && sb == out {
        if n >= PAR_MIN {
            return a.par_iter().zip(b.par_iter()).map(|(&x, &y)| f(x, y)).collect();
        }
        return a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect();
    }
    if sa == out && b.len() == 1 {
        let y = b[0];
        return map_vec(a, |x| f(x, y));
    }
    if sb == out && a.len() == 1 {
        let x = a[0];
        return map_vec(b, |y| f(x, y));
    }
    let (ta, tb) = (broadcast_strides(sa, out), broadcast_strides(sb, out));
    StridedIter::new(out, &ta, 0).zip(StridedIter::new(out, &tb, 0)).map(|(i, j)| f(a[i], b[j])).collect()
}

/// Float math the kernels need, for f32 and f64.
trait Float: CpuElem + num_traits::Float + Sync {
    fn erf(self) -> Self;
    fn erfinv(self) -> Self;
    fn round_even(self) -> Self;
}
impl Float for f32 {
    fn erf(self) -> Self {
        libm::erff(self)
    }
    /// Through f64 (accurate to a few f64 ulps), then one rounding.
    fn erfinv(self) -> Self {
        erfinv_f64(self as f64) as f32
    }
    fn round_even(self) -> Self {
        self.round_ties_even()
    }
}
impl Float for f64 {
    fn erf(self) -> Self {
        libm::erf(self)
    }
    fn erfinv(self) -> Self {
        erfinv_f64(self)
    }
    fn round_even(self) -> Self {
        self.round_ties_even()
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

fn unary_float<F: Float>(op: UnaryOp, v: &[F]) -> Result<CpuData> {
    use UnaryOp::*;
    let zero = F::zero();
    let f: fn(F) -> F = match op {
        Neg => |x| -x,
        Abs => |x| x.abs(),
        Sign => |x| if x.is_nan() || x == F::zero() { x } else { x.signum() },
        Square => |x| x * x,
        Floor => |x| x.floor(),
        Ceil => |x| x.ceil(),
        Round => |x| x.round_even(),
        Exp => |x| x.exp(),
        Expm1 => |x| x.exp_m1(),
        Log => |x| x.ln(),
        Log1p => |x| x.ln_1p(),
        Log2 => |x| x.log2(),
        Sqrt => |x| x.sqrt(),
        Rsqrt => |x| x.sqrt().recip(),
        Reciprocal => |x| x.recip(),
        Sin => |x| x.sin(),
        Cos => |x| x.cos(),
        Tan => |x| x.tan(),
        Tanh => |x| x.tanh(),
        // Split at 0 so exp never overflows.
        Sigmoid => |x| {
            if x >= F::zero() {
                F::one() / (F::one() + (-x).exp())
            } else {
                let e = x.exp();
                e / (F::one() + e)
            }
        },
        Erf => |x| x.erf(),
        Erfinv => |x| x.erfinv(),
        IsNan => return Ok(CpuData::Bool(map_vec(v, |x| x.is_nan()))),
        IsInf => return Ok(CpuData::Bool(map_vec(v, |x| x.is_infinite()))),
        LogicalNot => return Ok(CpuData::Bool(map_vec(v, |x| x == zero))),
    };
    Ok(F::wrap(map_vec(v, f)))
}

/// Integer math the kernels need; wrapping like NumPy, never trapping. The wrapping
/// arithmetic comes from `num_traits`; only what differs by signedness is per type.
trait Int:
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
                self.wrapping_pow(u32::try_from(o).unwrap_or(u32::MAX))
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

fn unary_int<I: Int>(op: UnaryOp, v: &[I]) -> Result<CpuData> {
    use UnaryOp::*;
    Ok(match op {
        Neg => I::wrap(map_vec(v, I::wneg)),
        Abs => I::wrap(map_vec(v, I::wabs)),
        Sign => I::wrap(map_vec(v, I::sign)),
        Square => I::wrap(map_vec(v, |x| x.wmul(x))),
        Floor | Ceil | Round => I::wrap(v.to_vec()),
        IsNan | IsInf => CpuData::Bool(vec![false; v.len()]),
        LogicalNot => CpuData::Bool(map_vec(v, |x| x.is_zero())),
        Exp | Expm1 | Log | Log1p | Log2 | Sqrt | Rsqrt | Reciprocal | Sin | Cos | Tan | Tanh | Sigmoid | Erf
        | Erfinv => return Err(unsupported(op.name(), I::DTYPE)),
    })
}

/// Runs `f` on the f32 widening of f16/bf16 data and narrows float results back.
fn via_f32(x: &CpuData, f: impl FnOnce(&CpuData) -> Result<CpuData>) -> Result<CpuData> {
    let dtype = x.dtype();
    let r = f(&x.astype(DType::F32))?;
    Ok(if r.dtype() == DType::F32 { r.astype(dtype) } else { r })
}

pub(super) fn unary(op: UnaryOp, x: &CpuData) -> Result<CpuData> {
    match x {
        CpuData::F32(v) => unary_float(op, v),
        CpuData::F64(v) => unary_float(op, v),
        CpuData::F16(_) | CpuData::BF16(_) => via_f32(x, |y| unary(op, y)),
        CpuData::I32(v) => unary_int(op, v),
        CpuData::I64(v) => unary_int(op, v),
        CpuData::U32(v) => unary_int(op, v),
        CpuData::Bool(v) => {
            use UnaryOp::*;
            match op {
                LogicalNot => Ok(CpuData::Bool(map_vec(v, |x| !x))),
                Abs | Floor | Ceil | Round => Ok(CpuData::Bool(v.clone())),
                IsNan | IsInf => Ok(CpuData::Bool(vec![false; v.len()])),
                Neg | Sign | Square | Exp | Expm1 | Log | Log1p | Log2 | Sqrt | Rsqrt | Reciprocal | Sin | Cos
                | Tan | Tanh | Sigmoid | Erf | Erfinv => Err(unsupported(op.name(), DType::Bool)),
            }
        }
    }
}

/// Comparisons and logical ops, for any element type.
fn compare<T: CpuElem>(op: BinaryOp, a: &[T], sa: &[usize], b: &[T], sb: &[usize], out: &[usize]) -> Option<Vec<bool>> {
    use BinaryOp::*;
    let z = T::default();
    Some(match op {
        Eq => zip_map(a, sa, b, sb, out, |x, y| x == y),
        Ne => zip_map(a, sa, b, sb, out, |x, y| x != y),
        Lt => zip_map(a, sa, b, sb, out, |x, y| x < y),
        Le => zip_map(a, sa, b, sb, out, |x, y| x <= y),
        Gt => zip_map(a, sa, b, sb, out, |x, y| x > y),
        Ge => zip_map(a, sa, b, sb, out, |x, y| x >= y),
        LogicalAnd => zip_map(a, sa, b, sb, out, |x, y| x != z && y != z),
        LogicalOr => zip_map(a, sa, b, sb, out, |x, y| x != z || y != z),
        LogicalXor => zip_map(a, sa, b, sb, out, |x, y| (x != z) != (y != z)),
        Add | Sub | Mul | Div | Pow | Remainder | FloorDivide | Maximum | Minimum | Atan2 => return None,
    })
}

/// `(a // b, a % b)` as NumPy's `npy_divmod`: the remainder from the exact `fmod`, moved
/// to the divisor's sign; the quotient `(a - mod) / b` snapped to the nearest integer.
/// (`floor(a / b)` is not it: the rounded `a / b` can cross an integer, 1 // 0.1 is 9.)
fn divmod<F: Float>(a: F, b: F) -> (F, F) {
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

fn binary_float<F: Float>(
    op: BinaryOp,
    a: &[F],
    sa: &[usize],
    b: &[F],
    sb: &[usize],
    out: &[usize],
) -> Result<CpuData> {
    use BinaryOp::*;
    if let Some(r) = compare(op, a, sa, b, sb, out) {
        return Ok(CpuData::Bool(r));
    }
    let f: fn(F, F) -> F = match op {
        Add => |x, y| x + y,
        Sub => |x, y| x - y,
        Mul => |x, y| x * y,
        Div => |x, y| x / y,
        Pow => |x, y| x.powf(y),
        Remainder => |x, y| divmod(x, y).1,
        FloorDivide => |x, y| divmod(x, y).0,
        // NaN propagates, as NumPy's maximum/minimum.
        Maximum => |x, y| if x.is_nan() || x > y { x } else { y },
        Minimum => |x, y| if x.is_nan() || x < y { x } else { y },
        Atan2 => |y, x| y.atan2(x),
        Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor => {
            return Err(Error::Internal(format!("{} is a comparison", op.name())));
        }
    };
    Ok(F::wrap(zip_map(a, sa, b, sb, out, f)))
}

fn binary_int<I: Int>(op: BinaryOp, a: &[I], sa: &[usize], b: &[I], sb: &[usize], out: &[usize]) -> Result<CpuData> {
    use BinaryOp::*;
    if let Some(r) = compare(op, a, sa, b, sb, out) {
        return Ok(CpuData::Bool(r));
    }
    let f: fn(I, I) -> I = match op {
        Add => I::wadd,
        Sub => I::wsub,
        Mul => I::wmul,
        FloorDivide => I::div_floor,
        Remainder => I::rem_floor,
        Pow => I::pow_int,
        Maximum => |x, y| x.max(y),
        Minimum => |x, y| x.min(y),
        Div | Atan2 => return Err(unsupported(op.name(), I::DTYPE)),
        Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor => {
            return Err(Error::Internal(format!("{} is a comparison", op.name())));
        }
    };
    Ok(I::wrap(zip_map(a, sa, b, sb, out, f)))
}

/// The typed slice of `b`, which `infer` gave the dtype of the other operand.
fn same<'a, T: CpuElem>(op: &str, b: &'a CpuData) -> Result<&'a [T]> {
    T::unwrap(b)
        .ok_or_else(|| Error::Internal(format!("{op}: operands of different dtypes {} and {}", T::DTYPE, b.dtype())))
}

pub(super) fn binary(
    op: BinaryOp,
    a: &CpuData,
    sa: &[usize],
    b: &CpuData,
    sb: &[usize],
    out: &[usize],
) -> Result<CpuData> {
    let name = op.name();
    match a {
        CpuData::F32(x) => binary_float(op, x, sa, same(name, b)?, sb, out),
        CpuData::F64(x) => binary_float(op, x, sa, same(name, b)?, sb, out),
        CpuData::I32(x) => binary_int(op, x, sa, same(name, b)?, sb, out),
        CpuData::I64(x) => binary_int(op, x, sa, same(name, b)?, sb, out),
        CpuData::U32(x) => binary_int(op, x, sa, same(name, b)?, sb, out),
        CpuData::F16(_) | CpuData::BF16(_) => {
            let y = b.astype(DType::F32);
            via_f32(a, |x| binary(op, x, sa, &y, sb, out))
        }
        CpuData::Bool(x) => {
            let y = same::<bool>(name, b)?;
            if let Some(r) = compare(op, x, sa, y, sb, out) {
                return Ok(CpuData::Bool(r));
            }
            use BinaryOp::*;
            let f: fn(bool, bool) -> bool = match op {
                Add | Maximum => |p, q| p | q,
                Mul | Minimum => |p, q| p & q,
                Sub | Div | Pow | Remainder | FloorDivide | Atan2 => return Err(unsupported(name, DType::Bool)),
                Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor => {
                    return Err(Error::Internal(format!("{name} is a comparison")));
                }
            };
            Ok(CpuData::Bool(zip_map(x, sa, y, sb, out, f)))
        }
    }
}

fn select_typed<T: CpuElem + Sync>(
    c: &[bool],
    sc: &[usize],
    a: &[T],
    sa: &[usize],
    b: &[T],
    sb: &[usize],
    out: &[usize],
) -> Vec<T> {
    let (tc, ta, tb) = (broadcast_strides(sc, out), broadcast_strides(sa, out), broadcast_strides(sb, out));
    StridedIter::new(out, &tc, 0)
        .zip(StridedIter::new(out, &ta, 0))
        .zip(StridedIter::new(out, &tb, 0))
        .map(|((i, j), k)| if c[i] { a[j] } else { b[k] })
        .collect()
}

pub(super) fn select(ins: &[&CpuData], shapes: &[&[usize]], out: &[usize]) -> Result<CpuData> {
    let c = same::<bool>("where", ins[0])?;
    let (sc, sa, sb) = (shapes[0], shapes[1], shapes[2]);
    let b = ins[2];
    Ok(map_data!(ins[1], |a| select_typed(c, sc, a, sa, same("where", b)?, sb, out)))
}
