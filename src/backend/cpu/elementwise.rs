//! Elementwise kernels: unary, binary with broadcasting, select.
//!
//! f16 and bf16 compute through f32 (convert, run, convert back): the rounding is that of
//! one f32 op followed by one narrowing, which matches what the GPU's f16 path does.

use rayon::prelude::*;

use super::storage::{CpuData, CpuElem};
use super::{PAR_MIN, unsupported};
use crate::dtype::DType;
use crate::error::Result;
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
    fn round_even(self) -> Self;
}
impl Float for f32 {
    fn erf(self) -> Self {
        libm::erff(self)
    }
    fn round_even(self) -> Self {
        self.round_ties_even()
    }
}
impl Float for f64 {
    fn erf(self) -> Self {
        libm::erf(self)
    }
    fn round_even(self) -> Self {
        self.round_ties_even()
    }
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
        IsNan => return Ok(CpuData::Bool(map_vec(v, |x| x.is_nan()))),
        IsInf => return Ok(CpuData::Bool(map_vec(v, |x| x.is_infinite()))),
        LogicalNot => return Ok(CpuData::Bool(map_vec(v, |x| x == zero))),
        #[allow(unreachable_patterns)]
        _ => return Err(unsupported(&format!("{op:?}"), F::DTYPE)),
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
        _ => return Err(unsupported(&format!("{op:?}"), I::DTYPE)),
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
        CpuData::Bool(v) => match op {
            UnaryOp::LogicalNot => Ok(CpuData::Bool(map_vec(v, |x| !x))),
            UnaryOp::Abs | UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round => Ok(CpuData::Bool(v.clone())),
            UnaryOp::IsNan | UnaryOp::IsInf => Ok(CpuData::Bool(vec![false; v.len()])),
            _ => Err(unsupported(&format!("{op:?}"), DType::Bool)),
        },
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
        _ => return None,
    })
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
        Remainder => |x, y| {
            let r = x % y;
            if r != F::zero() && ((r < F::zero()) != (y < F::zero())) { r + y } else { r }
        },
        FloorDivide => |x, y| (x / y).floor(),
        // NaN propagates, as NumPy's maximum/minimum.
        Maximum => |x, y| if x.is_nan() || x > y { x } else { y },
        Minimum => |x, y| if x.is_nan() || x < y { x } else { y },
        _ => return Err(unsupported(&format!("{op:?}"), F::DTYPE)),
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
        Div | FloorDivide => I::div_floor,
        Remainder => I::rem_floor,
        Pow => I::pow_int,
        Maximum => |x, y| x.max(y),
        Minimum => |x, y| x.min(y),
        _ => return Err(unsupported(&format!("{op:?}"), I::DTYPE)),
    };
    Ok(I::wrap(zip_map(a, sa, b, sb, out, f)))
}

pub(super) fn binary(
    op: BinaryOp,
    a: &CpuData,
    sa: &[usize],
    b: &CpuData,
    sb: &[usize],
    out: &[usize],
) -> Result<CpuData> {
    match (a, b) {
        (CpuData::F32(x), CpuData::F32(y)) => binary_float(op, x, sa, y, sb, out),
        (CpuData::F64(x), CpuData::F64(y)) => binary_float(op, x, sa, y, sb, out),
        (CpuData::I32(x), CpuData::I32(y)) => binary_int(op, x, sa, y, sb, out),
        (CpuData::I64(x), CpuData::I64(y)) => binary_int(op, x, sa, y, sb, out),
        (CpuData::U32(x), CpuData::U32(y)) => binary_int(op, x, sa, y, sb, out),
        (CpuData::F16(_), CpuData::F16(_)) | (CpuData::BF16(_), CpuData::BF16(_)) => {
            let y = b.astype(DType::F32);
            via_f32(a, |x| binary(op, x, sa, &y, sb, out))
        }
        (CpuData::Bool(x), CpuData::Bool(y)) => {
            if let Some(r) = compare(op, x, sa, y, sb, out) {
                return Ok(CpuData::Bool(r));
            }
            let f: fn(bool, bool) -> bool = match op {
                BinaryOp::Add | BinaryOp::Maximum => |p, q| p | q,
                BinaryOp::Mul | BinaryOp::Minimum => |p, q| p & q,
                _ => return Err(unsupported(&format!("{op:?}"), DType::Bool)),
            };
            Ok(CpuData::Bool(zip_map(x, sa, y, sb, out, f)))
        }
        _ => Err(crate::error::Error::Eval(format!(
            "binary {op:?}: operands of different dtypes {} and {}",
            a.dtype(),
            b.dtype()
        ))),
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
    let CpuData::Bool(c) = ins[0] else {
        return Err(unsupported("where (condition must be bool)", ins[0].dtype()));
    };
    let (sc, sa, sb) = (shapes[0], shapes[1], shapes[2]);
    macro_rules! sel {
        ($($v:ident),*) => {
            match (ins[1], ins[2]) {
                $((CpuData::$v(a), CpuData::$v(b)) => Ok(CpuData::$v(select_typed(c, sc, a, sa, b, sb, out))),)*
                _ => Err(crate::error::Error::Eval("where: branches of different dtypes".into())),
            }
        };
    }
    sel!(Bool, U32, I32, I64, F16, BF16, F32, F64)
}
