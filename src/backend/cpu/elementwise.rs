//! Elementwise kernels: unary, binary with broadcasting, select.
//!
//! The slice kernels ([`unary_into`], [`binary_into`], [`compare_into`],
//! [`predicate_into`]) are the one definition of every op: allocation-free loops over
//! slices and scalars, compiled for the CPU's widest instruction set
//! ([`super::simd::vectorize`]). The whole-array kernels ([`unary`], [`binary`],
//! [`select`]) split their output into chunks and broadcast runs ([`super::broadcast`])
//! and call them; fused execution can call them on chunks of its own.
//!
//! f16 and bf16 compute through f32 (convert, run, convert back): the rounding is that of
//! one f32 op followed by one narrowing, which matches what the GPU's f16 path does.

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

use super::broadcast::{Layout, par_fill};
use super::scalar::{Float, Int, divmod};
use super::simd::vectorize;
use super::storage::{CpuData, CpuElem, map_data};
use super::unsupported;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::primitive::{BinaryOp, UnaryOp};

/// One input of a binary slice kernel: a slice as long as the output, or one value
/// repeated (a broadcast scalar).
#[derive(Debug)]
pub(crate) enum Operand<'a, T> {
    /// One element per output element.
    Slice(&'a [T]),
    /// The same element for every output element.
    Scalar(T),
}

impl<T: Copy> Clone for Operand<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Copy> Copy for Operand<'_, T> {}

impl<'a, T: Copy> Operand<'a, T> {
    #[inline(always)]
    fn get(&self, i: usize) -> T {
        match self {
            Operand::Slice(s) => s[i],
            Operand::Scalar(x) => *x,
        }
    }

    /// The slice's length; `None` for a scalar.
    fn len(&self) -> Option<usize> {
        match self {
            Operand::Slice(s) => Some(s.len()),
            Operand::Scalar(_) => None,
        }
    }

    /// The same operand restricted to `range` (a scalar stays itself).
    #[inline]
    fn sub(&self, start: usize, len: usize) -> Operand<'a, T> {
        match *self {
            Operand::Slice(s) => Operand::Slice(&s[start..start + len]),
            Operand::Scalar(x) => Operand::Scalar(x),
        }
    }
}

fn length_error(what: &str, got: usize, want: usize) -> Error {
    Error::Internal(format!("{what}: input of {got} elements for an output of {want}"))
}

/// `out[i] = f(x[i])`, vectorised.
#[inline(always)]
fn map1<T: Copy, U: Copy>(x: &[T], out: &mut [U], f: impl Fn(T) -> U) -> Result<()> {
    if x.len() != out.len() {
        return Err(length_error("unary", x.len(), out.len()));
    }
    vectorize(
        #[inline(always)]
        || {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = f(v);
            }
        },
    );
    Ok(())
}

/// `out[i] = f(a[i], b[i])` over slices and scalars, vectorised.
#[inline(always)]
fn map2<T: Copy, U: Copy>(a: Operand<'_, T>, b: Operand<'_, T>, out: &mut [U], f: impl Fn(T, T) -> U) -> Result<()> {
    use Operand::{Scalar, Slice};
    let n = out.len();
    for op in [a, b] {
        if let Slice(s) = op
            && s.len() != n
        {
            return Err(length_error("binary", s.len(), n));
        }
    }
    vectorize(
        #[inline(always)]
        || match (a, b) {
            (Slice(a), Slice(b)) => {
                for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
                    *o = f(x, y);
                }
            }
            (Slice(a), Scalar(y)) => {
                for (o, &x) in out.iter_mut().zip(a) {
                    *o = f(x, y);
                }
            }
            (Scalar(x), Slice(b)) => {
                for (o, &y) in out.iter_mut().zip(b) {
                    *o = f(x, y);
                }
            }
            (Scalar(x), Scalar(y)) => {
                let v = f(x, y);
                for o in out.iter_mut() {
                    *o = v;
                }
            }
        },
    );
    Ok(())
}

/// Replaces `out[i]` with `slow(i)` where `fast(i)` is false: the rare arguments a
/// vector function does not cover (huge sin/cos arguments, pow's special cases).
#[inline(always)]
fn fix_up<U>(out: &mut [U], fast: impl Fn(usize) -> bool, slow: impl Fn(usize) -> U) {
    for (i, o) in out.iter_mut().enumerate() {
        if !fast(i) {
            *o = slow(i);
        }
    }
}

/// Element types with slice kernels: every type but bool computes, bool has the logical
/// forms of the ops that take it.
pub(crate) trait SliceElem: CpuElem + Sync + Send {
    /// `out = op(x)`; predicates (bool output) go through [`predicate_into`] instead.
    fn unary_into(op: UnaryOp, x: &[Self], out: &mut [Self]) -> Result<()>;
    /// `out = op(a, b)` for arithmetic ops; comparisons go through [`compare_into`].
    fn binary_into(op: BinaryOp, a: Operand<'_, Self>, b: Operand<'_, Self>, out: &mut [Self]) -> Result<()>;
}

/// `out = op(x)` elementwise, for ops whose output dtype is the input's (not the
/// predicates `isnan`, `isinf`, `logical_not`: see [`predicate_into`]). Exactly what the
/// whole-array kernel computes.
pub(crate) fn unary_into<T: SliceElem>(op: UnaryOp, x: &[T], out: &mut [T]) -> Result<()> {
    T::unary_into(op, x, out)
}

/// `out = op(a, b)` elementwise for the arithmetic ops (not comparisons or logical ops:
/// see [`compare_into`]). Exactly what the whole-array kernel computes.
pub(crate) fn binary_into<T: SliceElem>(
    op: BinaryOp,
    a: Operand<'_, T>,
    b: Operand<'_, T>,
    out: &mut [T],
) -> Result<()> {
    T::binary_into(op, a, b, out)
}

fn not_here(op: &str, form: &str) -> Error {
    Error::Internal(format!("{op} has a bool output: use {form}"))
}

fn unary_float<F: Float>(op: UnaryOp, x: &[F], out: &mut [F]) -> Result<()> {
    use UnaryOp::*;
    match op {
        Neg => map1(x, out, |v| -v),
        Abs => map1(x, out, |v| v.abs()),
        // NumPy's sign: +0 at either zero, NaN stays NaN.
        Sign => map1(x, out, |v| {
            if v.is_nan() {
                v
            } else if v == F::zero() {
                F::zero()
            } else {
                v.signum()
            }
        }),
        Square => map1(x, out, |v| v * v),
        Floor => map1(x, out, |v| v.floor()),
        Ceil => map1(x, out, |v| v.ceil()),
        Round => map1(x, out, F::round_even),
        Exp => map1(x, out, F::exp_),
        Expm1 => map1(x, out, F::expm1_),
        Log => map1(x, out, F::ln_),
        Log1p => map1(x, out, F::ln1p_),
        Log2 => map1(x, out, F::log2_),
        Sqrt => map1(x, out, |v| v.sqrt()),
        Rsqrt => map1(x, out, |v| v.sqrt().recip()),
        Reciprocal => map1(x, out, |v| v.recip()),
        Sin | Cos => {
            let sin = op == Sin;
            if sin { map1(x, out, F::sin_) } else { map1(x, out, F::cos_) }?;
            if F::FIXUP {
                fix_up(out, |i| x[i].trig_fast(), |i| if sin { x[i].sin() } else { x[i].cos() });
            }
            Ok(())
        }
        Tan => map1(x, out, |v| v.tan()),
        Tanh => map1(x, out, F::tanh_),
        Sigmoid => map1(x, out, F::sigmoid),
        Erf => map1(x, out, F::erf),
        Erfinv => map1(x, out, F::erfinv),
        IsNan | IsInf | LogicalNot => Err(not_here(op.name(), "predicate_into")),
    }
}

fn binary_float<F: Float>(op: BinaryOp, a: Operand<'_, F>, b: Operand<'_, F>, out: &mut [F]) -> Result<()> {
    use BinaryOp::*;
    match op {
        Add => map2(a, b, out, |x, y| x + y),
        Sub => map2(a, b, out, |x, y| x - y),
        Mul => map2(a, b, out, |x, y| x * y),
        Div => map2(a, b, out, |x, y| x / y),
        Pow => {
            map2(a, b, out, F::pow_)?;
            if F::FIXUP {
                fix_up(out, |i| a.get(i).pow_fast(b.get(i)), |i| a.get(i).powf(b.get(i)));
            }
            Ok(())
        }
        Remainder => map2(a, b, out, |x, y| divmod(x, y).1),
        FloorDivide => map2(a, b, out, |x, y| divmod(x, y).0),
        // NaN propagates, as NumPy's maximum/minimum.
        Maximum => map2(a, b, out, |x, y| if x.is_nan() || x > y { x } else { y }),
        Minimum => map2(a, b, out, |x, y| if x.is_nan() || x < y { x } else { y }),
        Atan2 => map2(a, b, out, |y, x| y.atan2(x)),
        Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor => Err(not_here(op.name(), "compare_into")),
    }
}

fn unary_int<I: Int + Send>(op: UnaryOp, x: &[I], out: &mut [I]) -> Result<()> {
    use UnaryOp::*;
    match op {
        Neg => map1(x, out, I::wneg),
        Abs => map1(x, out, I::wabs),
        Sign => map1(x, out, I::sign),
        Square => map1(x, out, |v| v.wmul(v)),
        Floor | Ceil | Round => map1(x, out, |v| v),
        IsNan | IsInf | LogicalNot => Err(not_here(op.name(), "predicate_into")),
        Exp | Expm1 | Log | Log1p | Log2 | Sqrt | Rsqrt | Reciprocal | Sin | Cos | Tan | Tanh | Sigmoid | Erf
        | Erfinv => Err(unsupported(op.name(), I::DTYPE)),
    }
}

fn binary_int<I: Int + Send>(op: BinaryOp, a: Operand<'_, I>, b: Operand<'_, I>, out: &mut [I]) -> Result<()> {
    use BinaryOp::*;
    match op {
        Add => map2(a, b, out, I::wadd),
        Sub => map2(a, b, out, I::wsub),
        Mul => map2(a, b, out, I::wmul),
        FloorDivide => map2(a, b, out, I::div_floor),
        Remainder => map2(a, b, out, I::rem_floor),
        Pow => map2(a, b, out, I::pow_int),
        Maximum => map2(a, b, out, |x, y| x.max(y)),
        Minimum => map2(a, b, out, |x, y| x.min(y)),
        Div | Atan2 => Err(unsupported(op.name(), I::DTYPE)),
        Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor => Err(not_here(op.name(), "compare_into")),
    }
}

macro_rules! slice_elem {
    ($t:ty, $unary:ident, $binary:ident) => {
        impl SliceElem for $t {
            fn unary_into(op: UnaryOp, x: &[Self], out: &mut [Self]) -> Result<()> {
                $unary(op, x, out)
            }
            fn binary_into(op: BinaryOp, a: Operand<'_, Self>, b: Operand<'_, Self>, out: &mut [Self]) -> Result<()> {
                $binary(op, a, b, out)
            }
        }
    };
}
slice_elem!(f32, unary_float, binary_float);
slice_elem!(f64, unary_float, binary_float);
slice_elem!(i32, unary_int, binary_int);
slice_elem!(i64, unary_int, binary_int);
slice_elem!(u32, unary_int, binary_int);

impl SliceElem for bool {
    fn unary_into(op: UnaryOp, x: &[bool], out: &mut [bool]) -> Result<()> {
        use UnaryOp::*;
        match op {
            Abs | Floor | Ceil | Round => map1(x, out, |v| v),
            IsNan | IsInf | LogicalNot => Err(not_here(op.name(), "predicate_into")),
            Neg | Sign | Square | Exp | Expm1 | Log | Log1p | Log2 | Sqrt | Rsqrt | Reciprocal | Sin | Cos | Tan
            | Tanh | Sigmoid | Erf | Erfinv => Err(unsupported(op.name(), DType::Bool)),
        }
    }
    fn binary_into(op: BinaryOp, a: Operand<'_, bool>, b: Operand<'_, bool>, out: &mut [bool]) -> Result<()> {
        use BinaryOp::*;
        match op {
            Add | Maximum => map2(a, b, out, |p, q| p | q),
            Mul | Minimum => map2(a, b, out, |p, q| p & q),
            Sub | Div | Pow | Remainder | FloorDivide | Atan2 => Err(unsupported(op.name(), DType::Bool)),
            Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor => {
                Err(not_here(op.name(), "compare_into"))
            }
        }
    }
}

/// A 16-bit float type: computed through f32 in stack-sized blocks, with `half`'s
/// vectorised slice conversions.
trait Half: CpuElem + Sync + Send
where
    [Self]: HalfFloatSliceExt,
{
}
impl Half for f16 {}
impl Half for bf16 {}

/// Block length of the f32 round trip of f16/bf16 kernels (16 KiB of f32 on the stack).
const HALF_BLOCK: usize = 4096;

fn half_unary<H: Half>(op: UnaryOp, x: &[H], out: &mut [H]) -> Result<()>
where
    [H]: HalfFloatSliceExt,
{
    if x.len() != out.len() {
        return Err(length_error("unary", x.len(), out.len()));
    }
    let (mut wx, mut wo) = ([0f32; HALF_BLOCK], [0f32; HALF_BLOCK]);
    for (xs, os) in x.chunks(HALF_BLOCK).zip(out.chunks_mut(HALF_BLOCK)) {
        let n = xs.len();
        xs.convert_to_f32_slice(&mut wx[..n]);
        f32::unary_into(op, &wx[..n], &mut wo[..n])?;
        os.convert_from_f32_slice(&wo[..n]);
    }
    Ok(())
}

/// The f32 widening of `x` in `buf`, or the widened scalar.
fn widen_operand<'b, H: Half>(x: Operand<'_, H>, buf: &'b mut [f32]) -> Operand<'b, f32>
where
    [H]: HalfFloatSliceExt,
{
    match x {
        Operand::Slice(s) => {
            s.convert_to_f32_slice(&mut buf[..s.len()]);
            Operand::Slice(&buf[..s.len()])
        }
        Operand::Scalar(v) => Operand::Scalar(v.to_f64() as f32),
    }
}

fn half_binary<H: Half>(op: BinaryOp, a: Operand<'_, H>, b: Operand<'_, H>, out: &mut [H]) -> Result<()>
where
    [H]: HalfFloatSliceExt,
{
    let (mut wa, mut wb, mut wo) = ([0f32; HALF_BLOCK], [0f32; HALF_BLOCK], [0f32; HALF_BLOCK]);
    for (k, os) in out.chunks_mut(HALF_BLOCK).enumerate() {
        let n = os.len();
        let (sa, sb) = (a.sub_checked(k * HALF_BLOCK, n)?, b.sub_checked(k * HALF_BLOCK, n)?);
        let (fa, fb) = (widen_operand(sa, &mut wa), widen_operand(sb, &mut wb));
        f32::binary_into(op, fa, fb, &mut wo[..n])?;
        os.convert_from_f32_slice(&wo[..n]);
    }
    Ok(())
}

impl<'a, T: Copy> Operand<'a, T> {
    /// [`Operand::sub`] with the bounds checked.
    fn sub_checked(&self, start: usize, len: usize) -> Result<Operand<'a, T>> {
        if let Operand::Slice(s) = self
            && s.len() < start + len
        {
            return Err(length_error("binary", s.len(), start + len));
        }
        Ok(self.sub(start, len))
    }
}

impl SliceElem for f16 {
    fn unary_into(op: UnaryOp, x: &[Self], out: &mut [Self]) -> Result<()> {
        half_unary(op, x, out)
    }
    fn binary_into(op: BinaryOp, a: Operand<'_, Self>, b: Operand<'_, Self>, out: &mut [Self]) -> Result<()> {
        half_binary(op, a, b, out)
    }
}
impl SliceElem for bf16 {
    fn unary_into(op: UnaryOp, x: &[Self], out: &mut [Self]) -> Result<()> {
        half_unary(op, x, out)
    }
    fn binary_into(op: BinaryOp, a: Operand<'_, Self>, b: Operand<'_, Self>, out: &mut [Self]) -> Result<()> {
        half_binary(op, a, b, out)
    }
}

/// `out = op(a, b)` for the comparisons and logical ops, any element type (f16/bf16
/// compare exactly in their own type, which orders like f32).
pub(crate) fn compare_into<T: CpuElem>(
    op: BinaryOp,
    a: Operand<'_, T>,
    b: Operand<'_, T>,
    out: &mut [bool],
) -> Result<()> {
    use BinaryOp::*;
    let z = T::default();
    match op {
        Eq => map2(a, b, out, |x, y| x == y),
        Ne => map2(a, b, out, |x, y| x != y),
        Lt => map2(a, b, out, |x, y| x < y),
        Le => map2(a, b, out, |x, y| x <= y),
        Gt => map2(a, b, out, |x, y| x > y),
        Ge => map2(a, b, out, |x, y| x >= y),
        LogicalAnd => map2(a, b, out, |x, y| x != z && y != z),
        LogicalOr => map2(a, b, out, |x, y| x != z || y != z),
        LogicalXor => map2(a, b, out, |x, y| (x != z) != (y != z)),
        Add | Sub | Mul | Div | Pow | Remainder | FloorDivide | Maximum | Minimum | Atan2 => {
            Err(Error::Internal(format!("{} is not a comparison", op.name())))
        }
    }
}

/// `out = op(x)` for the predicates `isnan`, `isinf` (false for non-floats) and
/// `logical_not` (`x == 0`), any element type.
pub(crate) fn predicate_into<T: CpuElem>(op: UnaryOp, x: &[T], out: &mut [bool]) -> Result<()> {
    use UnaryOp::*;
    let z = T::default();
    match op {
        #[allow(clippy::eq_op)]
        IsNan => map1(x, out, |v| v != v),
        IsInf => map1(x, out, |v| v.to_f64().is_infinite()),
        LogicalNot => map1(x, out, |v| v == z),
        Neg | Abs | Sign | Square | Floor | Ceil | Round | Exp | Expm1 | Log | Log1p | Log2 | Sqrt | Rsqrt
        | Reciprocal | Sin | Cos | Tan | Tanh | Sigmoid | Erf | Erfinv => {
            Err(Error::Internal(format!("{} is not a predicate", op.name())))
        }
    }
}

/// An output of `n` elements, every one of which the caller writes ([`super::pool::output`]).
fn output<U: CpuElem>(n: usize) -> Vec<U> {
    super::pool::output(n)
}

/// `f` on chunks of the contiguous input `x` and the output.
fn unary_map<T: Sync, U: CpuElem + Send>(x: &[T], f: impl Fn(&[T], &mut [U]) -> Result<()> + Sync) -> Result<Vec<U>> {
    let mut out = output(x.len());
    par_fill(&mut out, |start, o| f(&x[start..start + o.len()], o))?;
    Ok(out)
}

pub(super) fn unary(op: UnaryOp, x: &CpuData) -> Result<CpuData> {
    if op.is_predicate() {
        return Ok(CpuData::Bool(super::storage::with_data!(x, |v| unary_map(v, |s, o| predicate_into(op, s, o))?)));
    }
    Ok(map_data!(x, |v| unary_map(v, |s, o| unary_into(op, s, o))?))
}

/// `f` over `a` and `b` broadcast to `out`, as runs of slices and scalars.
fn binary_map<T: Copy + Sync, U: CpuElem + Send>(
    a: &[T],
    sa: &[usize],
    b: &[T],
    sb: &[usize],
    out: &[usize],
    f: impl Fn(Operand<'_, T>, Operand<'_, T>, &mut [U]) -> Result<()> + Sync,
) -> Result<Vec<U>> {
    if sa == out && sb == out {
        // Nothing broadcast: slices in step with the output, no layout to build (its
        // strides and merged axes were 2.3k of the 14.3k instructions of a 4-element
        // add read back; callgrind, session 16).
        let mut res = output(crate::shape::numel(out));
        par_fill(&mut res, |start, o| {
            let n = o.len();
            f(Operand::Slice(&a[start..start + n]), Operand::Slice(&b[start..start + n]), o)
        })?;
        return Ok(res);
    }
    let layout = Layout::new([sa, sb], out);
    let mut res = output(layout.numel());
    par_fill(&mut res, |start, chunk| {
        layout.for_runs(start, chunk, |[ra, rb], o| {
            let n = o.len();
            f(operand(a, ra, n), operand(b, rb, n), o)
        })
    })?;
    Ok(res)
}

/// The operand of a run: `n` elements of `v` from `off`, or the one at `off`.
fn operand<T: Copy>(v: &[T], (off, contiguous): (usize, bool), n: usize) -> Operand<'_, T> {
    if contiguous { Operand::Slice(&v[off..off + n]) } else { Operand::Scalar(v[off]) }
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
    use BinaryOp::*;
    let name = op.name();
    let comparison = match op {
        Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor => true,
        Add | Sub | Mul | Div | Pow | Remainder | FloorDivide | Maximum | Minimum | Atan2 => false,
    };
    if comparison {
        return Ok(CpuData::Bool(super::storage::with_data!(a, |x| {
            binary_map(x, sa, same(name, b)?, sb, out, |p, q, o| compare_into(op, p, q, o))?
        })));
    }
    Ok(map_data!(a, |x| binary_map(x, sa, same(name, b)?, sb, out, |p, q, o| binary_into(op, p, q, o))?))
}

/// `out[i] = if c[i] { x[i] } else { y[i] }` over slices and scalars: the one
/// definition of `where`, for the whole-array kernel and fused chunks alike.
pub(crate) fn select_into<T: Copy>(
    c: Operand<'_, bool>,
    x: Operand<'_, T>,
    y: Operand<'_, T>,
    out: &mut [T],
) -> Result<()> {
    let n = out.len();
    for len in [c.len(), x.len(), y.len()].into_iter().flatten() {
        if len != n {
            return Err(length_error("where", len, n));
        }
    }
    vectorize(
        #[inline(always)]
        || {
            for (i, o) in out.iter_mut().enumerate() {
                *o = if c.get(i) { x.get(i) } else { y.get(i) };
            }
        },
    );
    Ok(())
}

pub(super) fn select(ins: &[&CpuData], shapes: &[&[usize]], out: &[usize]) -> Result<CpuData> {
    fn go<T: CpuElem>(c: &[bool], a: &[T], b: &[T], shapes: &[&[usize]], out: &[usize]) -> Result<Vec<T>> {
        let layout = Layout::new([shapes[0], shapes[1], shapes[2]], out);
        let mut res = output(layout.numel());
        par_fill(&mut res, |start, chunk| {
            layout.for_runs(start, chunk, |[rc, ra, rb], o| {
                let n = o.len();
                select_into(operand(c, rc, n), operand(a, ra, n), operand(b, rb, n), o)
            })
        })?;
        Ok(res)
    }
    let c = same::<bool>("where", ins[0])?;
    let b = ins[2];
    Ok(map_data!(ins[1], |a| go(c, a, same("where", b)?, shapes, out)?))
}
