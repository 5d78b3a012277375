//! Typed host storage and the per-dtype dispatch the CPU kernels use.

use half::{bf16, f16};

use crate::dtype::{DType, Element, with_elem_type};

/// Host data of one buffer, typed. Bool is stored as Rust `bool` (one byte, 0 or 1).
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub(crate) enum CpuData {
    Bool(Vec<bool>),
    U32(Vec<u32>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F16(Vec<f16>),
    BF16(Vec<bf16>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// Runs `$body` with `$v` bound to the typed vector, rewrapping the result in the same
/// variant. The body is generic code instantiated once per dtype.
macro_rules! map_data {
    ($data:expr, |$v:ident| $body:expr) => {
        match $data {
            CpuData::Bool($v) => CpuData::Bool($body),
            CpuData::U32($v) => CpuData::U32($body),
            CpuData::I32($v) => CpuData::I32($body),
            CpuData::I64($v) => CpuData::I64($body),
            CpuData::F16($v) => CpuData::F16($body),
            CpuData::BF16($v) => CpuData::BF16($body),
            CpuData::F32($v) => CpuData::F32($body),
            CpuData::F64($v) => CpuData::F64($body),
        }
    };
}
pub(crate) use map_data;

/// Runs `$body` with `$v` bound to the payload of whichever variant `$x` holds: `$enum`
/// is one of the CPU's enums with a variant per element type, named as [`DType`]'s
/// ([`CpuData`], and the fused interpreter's slices). Not rewrapped.
macro_rules! match_elems {
    ($enum:ident, $x:expr, |$v:ident| $body:expr) => {
        match $x {
            $enum::Bool($v) => $body,
            $enum::U32($v) => $body,
            $enum::I32($v) => $body,
            $enum::I64($v) => $body,
            $enum::F16($v) => $body,
            $enum::BF16($v) => $body,
            $enum::F32($v) => $body,
            $enum::F64($v) => $body,
        }
    };
}
pub(crate) use match_elems;

/// Like [`map_data`] but the body returns anything (not rewrapped).
macro_rules! with_data {
    ($data:expr, |$v:ident| $body:expr) => {
        $crate::backend::cpu::storage::match_elems!(CpuData, $data, |$v| $body)
    };
}
#[allow(unused_imports)]
pub(crate) use with_data;

/// An element type the CPU kernels handle: convertible, comparable, wrappable.
pub(crate) trait CpuElem: Element + PartialOrd + Default {
    /// Wraps a vector of this type.
    fn wrap(v: Vec<Self>) -> CpuData;
    /// The typed slice, if `d` holds this type.
    fn unwrap(d: &CpuData) -> Option<&[Self]>;
    /// The vector itself, if `d` holds this type.
    fn into_vec(d: CpuData) -> Option<Vec<Self>>;
    /// `self + other` in this type as `scatter_add` accumulates: integers wrap (two's
    /// complement), floats round once per addition, bool is `or`.
    fn accumulate(self, other: Self) -> Self;
}

macro_rules! cpu_elem {
    ($t:ty, $var:ident, $add:expr) => {
        impl CpuElem for $t {
            fn wrap(v: Vec<Self>) -> CpuData {
                CpuData::$var(v)
            }
            fn unwrap(d: &CpuData) -> Option<&[Self]> {
                if let CpuData::$var(v) = d { Some(v) } else { None }
            }
            fn into_vec(d: CpuData) -> Option<Vec<Self>> {
                if let CpuData::$var(v) = d { Some(v) } else { None }
            }
            fn accumulate(self, other: Self) -> Self {
                #[allow(clippy::redundant_closure_call)]
                ($add)(self, other)
            }
        }
    };
}
cpu_elem!(bool, Bool, |a: bool, b: bool| a | b);
cpu_elem!(u32, U32, u32::wrapping_add);
cpu_elem!(i32, I32, i32::wrapping_add);
cpu_elem!(i64, I64, i64::wrapping_add);
cpu_elem!(f16, F16, |a: f16, b: f16| a + b);
cpu_elem!(bf16, BF16, |a: bf16, b: bf16| a + b);
cpu_elem!(f32, F32, |a: f32, b: f32| a + b);
cpu_elem!(f64, F64, |a: f64, b: f64| a + b);

impl CpuData {
    /// The dtype held.
    pub fn dtype(&self) -> DType {
        with_data!(self, |v| elem_dtype(v))
    }

    /// Bytes of the elements (bool one byte each), as counted by `lazuli::memory`.
    pub fn byte_len(&self) -> u64 {
        with_data!(self, |v| std::mem::size_of_val(v.as_slice()) as u64)
    }

    /// Bytes the vector has room for (its allocation).
    pub fn capacity_bytes(&self) -> usize {
        fn room<T>(v: &Vec<T>) -> usize {
            v.capacity() * std::mem::size_of::<T>()
        }
        with_data!(self, |v| room(v))
    }

    /// `len` elements of `dtype` for a kernel that writes every one: a pooled vector's
    /// old values, zero pages, or (below the pool's size) a filled small allocation
    /// ([`super::pool::output`]).
    pub fn output(dtype: DType, len: usize) -> CpuData {
        with_elem_type!(dtype, T => <T as CpuElem>::wrap(super::pool::output::<T>(len)))
    }

    /// `len` copies of `value` cast to `dtype`.
    pub fn filled(dtype: DType, len: usize, value: f64) -> CpuData {
        with_elem_type!(dtype, T => <T as CpuElem>::wrap(super::pool::filled(len, <T as Element>::from_f64(value))))
    }

    /// Builds typed data from `f64` values.
    pub fn from_f64s(dtype: DType, it: impl Iterator<Item = f64>) -> CpuData {
        with_elem_type!(dtype, T => <T as CpuElem>::wrap(it.map(<T as Element>::from_f64).collect()))
    }

    /// Parses host bytes of `dtype`.
    pub fn from_bytes(dtype: DType, bytes: &[u8]) -> CpuData {
        with_elem_type!(dtype, T => <T as CpuElem>::wrap(<T as Element>::vec_from_bytes(bytes)))
    }

    /// Host bytes of the data.
    pub fn to_bytes(&self) -> Vec<u8> {
        with_data!(self, |v| Element::slice_to_bytes(v))
    }

    /// The values of integer data as i64 (exact); `None` for bool and floats.
    fn as_i64s(&self) -> Option<Box<dyn Iterator<Item = i64> + '_>> {
        match self {
            CpuData::U32(v) => Some(Box::new(v.iter().map(|&x| x as i64))),
            CpuData::I32(v) => Some(Box::new(v.iter().map(|&x| x as i64))),
            CpuData::I64(v) => Some(Box::new(v.iter().copied())),
            CpuData::Bool(_) | CpuData::F16(_) | CpuData::BF16(_) | CpuData::F32(_) | CpuData::F64(_) => None,
        }
    }

    /// Converts to another dtype with `as` semantics (float to bool is `!= 0`); integer to
    /// float is rounded once, to nearest even.
    pub fn astype(&self, dtype: DType) -> CpuData {
        if self.dtype() == dtype {
            return self.clone();
        }
        // Integer to integer wraps bit-exactly (through f64 would round i64 beyond 2^53).
        if let Some(v) = self.as_i64s() {
            match dtype {
                DType::I32 => return CpuData::I32(v.map(|x| x as i32).collect()),
                DType::U32 => return CpuData::U32(v.map(|x| x as u32).collect()),
                DType::I64 => return CpuData::I64(v.collect()),
                DType::Bool | DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {}
            }
        }
        // i64 beyond 2^53 would round twice through f64 (2^60 + 2^36 + 1 to f32 gives 2^60,
        // not 2^60 + 2^37); rounding to odd into f64 keeps the one narrowing exact.
        if let CpuData::I64(v) = self {
            return match dtype {
                DType::F64 => CpuData::F64(v.iter().map(|&x| x as f64).collect()),
                DType::Bool | DType::U32 | DType::I32 | DType::I64 | DType::F16 | DType::BF16 | DType::F32 => {
                    Self::from_f64s(dtype, v.iter().map(|&x| i64_to_f64_odd(x)))
                }
            };
        }
        with_data!(self, |v| Self::from_f64s(dtype, v.iter().map(|x| x.to_f64())))
    }
}

/// `x` as `f64` rounded to odd: truncated to 53 significant bits, the last set when
/// any dropped bit was. Rounding that value once more to a format of at most 51 bits
/// (f32, f16, bf16) gives the correctly rounded conversion of `x` (Boldo & Melquiond,
/// "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to
/// odd", 2008). Exact for `|x| < 2^53`; not for `f64` itself, which takes `x as f64`.
pub(crate) fn i64_to_f64_odd(x: i64) -> f64 {
    let a = x.unsigned_abs();
    if a < 1 << 53 {
        return x as f64;
    }
    let shift = 11 - a.leading_zeros();
    let mut m = a >> shift;
    if a & ((1u64 << shift) - 1) != 0 {
        m |= 1;
    }
    let v = m as f64 * (1u64 << shift) as f64;
    if x < 0 { -v } else { v }
}

fn elem_dtype<T: Element>(_: &[T]) -> DType {
    T::DTYPE
}
