//! Counter-based random numbers (`lazuli::random`), in the style of JAX: a key is a
//! `U32` array `[2]`, every sampler is a pure function of its key, and new keys come from
//! [`split`]. Everything lowers to `RandomBits` (Threefry-2x32-20) and elementwise
//! primitives, so results are the same on every device.
//!
//! Counter layout under one key: counters 0 and 1 make the key the samplers use, and
//! [`split`] takes its keys from counters 2 onwards. A key's samples and its children
//! therefore never share a counter.
//!
//! ```
//! use lazuli::{DType, random};
//! let k = random::key(42)?;
//! let ks = random::split(&k, 2)?;
//! let u = random::uniform(&ks.slice(&[0.into()])?, &[3], 0.0, 1.0, DType::F32)?;
//! assert!(u.to_vec::<f32>()?.iter().all(|&x| (0.0..1.0).contains(&x)));
//! # Ok::<(), lazuli::Error>(())
//! ```

use half::{bf16, f16};

use crate::array::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::primitive::{Binary, BinaryOp, Full, RandomBits, Unary, UnaryOp};
use crate::shape::numel;

use super::shape::{SliceArg, concatenate};

/// 2^-24: scales a 24-bit integer into `[0, 1)` exactly in `F32`.
const INV_2_24: f64 = 1.0 / 16_777_216.0;

fn check_key(op: &'static str, key: &Array) -> Result<()> {
    if key.dtype() != DType::U32 {
        return Err(Error::dtype(
            op,
            key.dtype(),
            format!("the key has dtype {}, but a key is uint32 of shape [2]; make one with random::key", key.dtype()),
        ));
    }
    if key.shape() != [2] {
        return Err(Error::shape(op, format!("a key has shape [2], got {:?}", key.shape())));
    }
    Ok(())
}

fn check_float(op: &'static str, dtype: DType) -> Result<()> {
    if !dtype.is_float() {
        return Err(Error::dtype(op, dtype, "samples are floating point (float16, bfloat16, float32, float64)"));
    }
    Ok(())
}

fn scalar(value: f64, dtype: DType) -> Result<Array> {
    Array::from_op(Full { value, shape: vec![], dtype }, [])
}

fn binary(op: BinaryOp, a: &Array, b: &Array) -> Result<Array> {
    Array::from_op(Binary { op }, [a.clone(), b.clone()])
}

fn binary_scalar(op: BinaryOp, a: &Array, value: f64) -> Result<Array> {
    binary(op, a, &scalar(value, a.dtype())?)
}

fn unary(op: UnaryOp, a: &Array) -> Result<Array> {
    Array::from_op(Unary { op }, [a.clone()])
}

/// `U32` random bits of `shape` for sampling with `key`.
fn bits(key: &Array, shape: &[usize]) -> Result<Array> {
    let sample_key = Array::from_op(RandomBits { shape: vec![2] }, [key.clone()])?;
    Array::from_op(RandomBits { shape: shape.to_vec() }, [sample_key])
}

/// The top 24 bits of `bits` as integers `0..2^24` in `dtype` (exact in every float
/// dtype from `F32` up).
fn top24(bits: &Array, dtype: DType) -> Result<Array> {
    binary_scalar(BinaryOp::FloorDivide, bits, 256.0)?.astype(dtype)
}

/// The largest value of `dtype` below `x` (as f64, exact in `dtype`).
fn largest_below(x: f64, dtype: DType) -> f64 {
    fn down16(bits: u16) -> u16 {
        match bits {
            b if b & 0x7fff == 0 => 0x8001,
            b if b & 0x8000 == 0 => b - 1,
            b => b + 1,
        }
    }
    match dtype {
        DType::F64 => x.next_down(),
        DType::F16 => {
            let y = f16::from_f64(x);
            let y = if y.to_f64() >= x { f16::from_bits(down16(y.to_bits())) } else { y };
            y.to_f64()
        }
        DType::BF16 => {
            let y = bf16::from_f64(x);
            let y = if y.to_f64() >= x { bf16::from_bits(down16(y.to_bits())) } else { y };
            y.to_f64()
        }
        // Only float dtypes are sampled; integers take the f32 answer, unused.
        DType::F32 | DType::Bool | DType::U32 | DType::I32 | DType::I64 => {
            let y = x as f32;
            let y = if y as f64 >= x { y.next_down() } else { y };
            y as f64
        }
    }
}

/// The dtype samples are computed in before the final cast.
fn compute_dtype(dtype: DType) -> DType {
    if dtype == DType::F64 { DType::F64 } else { DType::F32 }
}

/// A key from a seed: `[seed >> 32, seed & 0xffff_ffff]` as `U32`.
pub fn key(seed: u64) -> Result<Array> {
    Array::from_slice(&[(seed >> 32) as u32, seed as u32], &[2])
}

/// `num` new keys (shape `[num, 2]`) from `key`, independent of each other and of the
/// samples drawn with `key` itself.
pub fn split(key: &Array, num: usize) -> Result<Array> {
    check_key("random.split", key)?;
    let rows = num.checked_add(1).ok_or_else(|| Error::shape("random.split", format!("{num} keys are too many")))?;
    let all = Array::from_op(RandomBits { shape: vec![rows, 2] }, [key.clone()])?;
    all.slice(&[SliceArg::new(Some(1), None, 1)])
}

/// Uniform samples in `[low, high)` of a float `dtype` (24 random bits per sample).
pub fn uniform(key: &Array, shape: &[usize], low: f64, high: f64, dtype: DType) -> Result<Array> {
    check_key("random.uniform", key)?;
    check_float("random.uniform", dtype)?;
    let cdt = compute_dtype(dtype);
    let width = high - low;
    let width_ok = if cdt == DType::F32 { (width as f32).is_finite() } else { width.is_finite() };
    if low.partial_cmp(&high) != Some(std::cmp::Ordering::Less) || !width_ok {
        return Err(Error::invalid("random.uniform", format!("needs finite low < high, got [{low}, {high})")));
    }
    let u = binary_scalar(BinaryOp::Mul, &top24(&bits(key, shape)?, cdt)?, INV_2_24)?;
    let x = binary_scalar(BinaryOp::Add, &binary_scalar(BinaryOp::Mul, &u, width)?, low)?.astype(dtype)?;
    // Rounding (in the compute or the output dtype) may reach `high`; keep it out.
    binary_scalar(BinaryOp::Minimum, &x, largest_below(high, dtype))
}

/// Normal samples with `mean` and standard deviation `std` of a float `dtype`
/// (Box-Muller on pairs of 24-bit uniforms).
pub fn normal(key: &Array, shape: &[usize], mean: f64, std: f64, dtype: DType) -> Result<Array> {
    check_key("random.normal", key)?;
    check_float("random.normal", dtype)?;
    if !mean.is_finite() || !std.is_finite() || std < 0.0 {
        return Err(Error::invalid("random.normal", format!("needs finite mean and std >= 0, got {mean}, {std}")));
    }
    let n = numel(shape);
    if n == 0 {
        return Array::from_op(Full { value: 0.0, shape: shape.to_vec(), dtype }, []);
    }
    let cdt = compute_dtype(dtype);
    let pairs = n.div_ceil(2);
    let b = bits(key, &[2, pairs])?;
    let half = |i: isize| b.slice(&[SliceArg::Index(i)]);
    // u1 in (0, 1] keeps the log finite; u2 in [0, 1).
    let u1 = binary_scalar(BinaryOp::Mul, &binary_scalar(BinaryOp::Add, &top24(&half(0)?, cdt)?, 1.0)?, INV_2_24)?;
    let u2 = binary_scalar(BinaryOp::Mul, &top24(&half(1)?, cdt)?, INV_2_24)?;
    let r = unary(UnaryOp::Sqrt, &binary_scalar(BinaryOp::Mul, &unary(UnaryOp::Log, &u1)?, -2.0)?)?;
    let theta = binary_scalar(BinaryOp::Mul, &u2, std::f64::consts::TAU)?;
    let z0 = binary(BinaryOp::Mul, &r, &unary(UnaryOp::Cos, &theta)?)?;
    let z1 = binary(BinaryOp::Mul, &r, &unary(UnaryOp::Sin, &theta)?)?;
    let z = concatenate(&[&z0, &z1], 0)?.slice(&[SliceArg::new(None, Some(n as isize), 1)])?;
    let z = binary_scalar(BinaryOp::Add, &binary_scalar(BinaryOp::Mul, &z, std)?, mean)?;
    z.reshape_to(shape.to_vec())?.astype(dtype)
}

/// Integers uniform in `[low, high)` of an integer `dtype`. The range may span at most
/// 2^32 values; samples are the random bits modulo the range (a bias below
/// `range / 2^32`).
pub fn randint(key: &Array, shape: &[usize], low: i64, high: i64, dtype: DType) -> Result<Array> {
    check_key("random.randint", key)?;
    let (min, max) = match dtype {
        DType::U32 => (0i128, u32::MAX as i128),
        DType::I32 => (i32::MIN as i128, i32::MAX as i128),
        DType::I64 => (i64::MIN as i128, i64::MAX as i128),
        DType::Bool | DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {
            return Err(Error::dtype("random.randint", dtype, "samples are integers (uint32, int32, int64)"));
        }
    };
    let (lo, hi) = (low as i128, high as i128);
    if lo >= hi || lo < min || hi - 1 > max {
        return Err(Error::invalid("random.randint", format!("needs low < high within {dtype}, got [{low}, {high})")));
    }
    let range = hi - lo;
    if range > 1 << 32 {
        return Err(Error::invalid("random.randint", format!("[{low}, {high}) spans more than 2^32 values")));
    }
    let b = bits(key, shape)?;
    let r = if range == 1 << 32 { b } else { binary_scalar(BinaryOp::Remainder, &b, range as f64)? };
    // U32 never overflows here; I32 wraps correctly (integer kernels wrap); I64 is exact.
    let r = r.astype(dtype)?;
    if low == 0 {
        return Ok(r);
    }
    // An i64 scalar keeps every bit of `low`; the others hold it exactly in f64.
    let low_arr = if dtype == DType::I64 { Array::scalar(low)? } else { scalar(low as f64, dtype)? };
    binary(BinaryOp::Add, &r, &low_arr)
}

/// Booleans that are `true` with probability `p` (in steps of 2^-24; `p = 1` is always
/// true and `p = 0` never).
pub fn bernoulli(key: &Array, p: f64, shape: &[usize]) -> Result<Array> {
    check_key("random.bernoulli", key)?;
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::invalid("random.bernoulli", format!("p must be in [0, 1], got {p}")));
    }
    let top = binary_scalar(BinaryOp::FloorDivide, &bits(key, shape)?, 256.0)?;
    binary_scalar(BinaryOp::Lt, &top, (p * 16_777_216.0).ceil())
}
