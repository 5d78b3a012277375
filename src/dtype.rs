//! Element types, the [`Element`] trait that maps Rust types to them, and type promotion.

use half::{bf16, f16};

/// The element type of an array.
///
/// `F64` and `I64` exist on the CPU only; the GPU backend returns an error for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// Boolean, one byte per element on the CPU.
    Bool = 0,
    /// Unsigned 32-bit integer.
    U32 = 1,
    /// Signed 32-bit integer.
    I32 = 2,
    /// Signed 64-bit integer (CPU only).
    I64 = 3,
    /// IEEE half precision.
    F16 = 4,
    /// bfloat16.
    BF16 = 5,
    /// IEEE single precision.
    F32 = 6,
    /// IEEE double precision (CPU only).
    F64 = 7,
}

impl DType {
    /// All dtypes, in promotion-lattice order.
    pub const ALL: [DType; 8] =
        [DType::Bool, DType::U32, DType::I32, DType::I64, DType::F16, DType::BF16, DType::F32, DType::F64];

    /// A stable code for the dtype (its lattice position), shared with the GPU shaders
    /// as the `DTYPE_*` constants.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// Bytes per element in host memory.
    pub fn size(self) -> usize {
        match self {
            DType::Bool => 1,
            DType::F16 | DType::BF16 => 2,
            DType::U32 | DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }

    /// True for the floating-point dtypes.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// True for the integer dtypes (not bool).
    pub fn is_int(self) -> bool {
        matches!(self, DType::U32 | DType::I32 | DType::I64)
    }

    /// True for signed integers and floats.
    pub fn is_signed(self) -> bool {
        matches!(self, DType::I32 | DType::I64) || self.is_float()
    }

    /// The dtype that float-valued ops (exp, sqrt, mean...) produce for this input:
    /// floats keep their type, integers and bool become `F32` (as in MLX).
    pub fn to_float(self) -> DType {
        if self.is_float() { self } else { DType::F32 }
    }

    /// Lower-case name, as in NumPy (`float32`, `int32`...).
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U32 => "uint32",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The result dtype of a binary op on arrays of dtypes `a` and `b`: MLX's table (JAX's
/// with 64-bit types off), not NumPy's. The lattice is bool < u32 < i32 < i64 < f16 <
/// bf16 < f32 < f64 and the larger side wins, except that `F16` with `BF16` gives `F32`.
/// Where NumPy differs (it widens so that every value of both inputs is representable):
///
/// | inputs | lazuli (MLX) | NumPy |
/// | --- | --- | --- |
/// | u32, i32 or i64 with f32 | f32 | f64 |
/// | u32, i32 or i64 with f16 | f16 | f64 |
/// | u32 with i32 | i32 (wrapping above 2^31) | i64 |
/// | f16 with bf16 | f32 | (no bf16) |
///
/// So integer values beyond the float's precision round (an i32 of 2^24 + 1 plus 0.0f32
/// is 2^24). `u32` with `i32` gives `i32` so that every device runs the result (the GPU
/// has no i64). Scalar operands are weakly typed (see the ops module docs).
pub fn promote(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    match (a, b) {
        (Bool, x) | (x, Bool) => x,
        (F16, BF16) | (BF16, F16) => F32,
        (x, y) if x.is_float() && y.is_float() => x.max(y),
        (x, _) if x.is_float() => x,
        (_, y) if y.is_float() => y,
        (U32, I32) | (I32, U32) => I32,
        (x, y) => x.max(y),
    }
}

/// Runs `$body` with `$t` naming the Rust element type of `$dtype` (a [`DType`] value):
/// one arm per dtype, so generic code is instantiated for each without writing the arms.
/// `$t` is a concrete type in each arm, where an inherent method wins over a trait's of
/// the same name (`half::f16::from_f64` rounds differently from [`Element::from_f64`]):
/// call trait methods as `<$t as Trait>::method`.
macro_rules! with_elem_type {
    ($dtype:expr, $t:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::Bool => {
                type $t = bool;
                $body
            }
            $crate::dtype::DType::U32 => {
                type $t = u32;
                $body
            }
            $crate::dtype::DType::I32 => {
                type $t = i32;
                $body
            }
            $crate::dtype::DType::I64 => {
                type $t = i64;
                $body
            }
            $crate::dtype::DType::F16 => {
                type $t = ::half::f16;
                $body
            }
            $crate::dtype::DType::BF16 => {
                type $t = ::half::bf16;
                $body
            }
            $crate::dtype::DType::F32 => {
                type $t = f32;
                $body
            }
            $crate::dtype::DType::F64 => {
                type $t = f64;
                $body
            }
        }
    };
}
pub(crate) use with_elem_type;

/// Host bytes (the layout of [`crate::Array::from_bytes`]) of `values` converted to `dtype`
/// with [`Element::from_f64`] (`as` semantics). For backends that compute parameters on the
/// host (fill patterns, aranges).
pub fn f64s_to_bytes(dtype: DType, values: impl Iterator<Item = f64>) -> Vec<u8> {
    with_elem_type!(dtype, T => {
        let mut out = Vec::new();
        for v in values {
            <T as Element>::write_bytes(<T as Element>::from_f64(v), &mut out);
        }
        out
    })
}

/// A Rust type that can be the element of an array. Implemented for
/// `f32, f64, f16, bf16, i32, u32, i64, bool`.
pub trait Element: Copy + Send + Sync + 'static + std::fmt::Debug {
    /// The dtype this type maps to.
    const DTYPE: DType;
    /// Converts to `f64` (exact for every type but large `i64`).
    fn to_f64(self) -> f64;
    /// Converts from `f64` with Rust's `as` semantics (saturating, NaN to 0 for integers).
    fn from_f64(v: f64) -> Self;
    /// Appends this value's host bytes (little-endian; bool is one byte, 0 or 1).
    fn write_bytes(self, out: &mut Vec<u8>);
    /// Reads one value from host bytes of [`DType::size`] length.
    fn read_bytes(b: &[u8]) -> Self;
    /// Host bytes of `values`, as [`Element::write_bytes`] lays them out. The crate's own
    /// types copy their memory in one go (it already is that layout).
    fn slice_to_bytes(values: &[Self]) -> Vec<u8> {
        let mut out = Vec::with_capacity(std::mem::size_of_val(values));
        for &v in values {
            v.write_bytes(&mut out);
        }
        out
    }
    /// Values from host bytes (a whole number of [`DType::size`] chunks), as
    /// [`Element::read_bytes`] reads them; one copy for the crate's own types.
    fn vec_from_bytes(bytes: &[u8]) -> Vec<Self> {
        bytes.chunks_exact(Self::DTYPE.size()).map(Self::read_bytes).collect()
    }
    /// [`Element::slice_to_bytes`] without the copy where `values` already are those bytes
    /// (the crate's own types).
    fn slice_bytes(values: &[Self]) -> std::borrow::Cow<'_, [u8]> {
        std::borrow::Cow::Owned(Self::slice_to_bytes(values))
    }
    /// `n` values whose host bytes `fill` writes ([`Element::vec_from_bytes`] of them):
    /// the crate's own types let `fill` write the vector's memory, so a read-back copies
    /// once.
    fn vec_filled(n: usize, fill: &mut dyn FnMut(&mut [u8]) -> crate::Result<()>) -> crate::Result<Vec<Self>> {
        let mut bytes = vec![0u8; n * Self::DTYPE.size()];
        fill(&mut bytes)?;
        Ok(Self::vec_from_bytes(&bytes))
    }
}

macro_rules! pod_element {
    ($t:ty, $d:expr, $to:expr, $from:expr) => {
        impl Element for $t {
            const DTYPE: DType = $d;
            fn to_f64(self) -> f64 {
                #[allow(clippy::redundant_closure_call)]
                ($to)(self)
            }
            fn from_f64(v: f64) -> Self {
                #[allow(clippy::redundant_closure_call)]
                ($from)(v)
            }
            fn write_bytes(self, out: &mut Vec<u8>) {
                out.extend_from_slice(bytemuck::bytes_of(&self));
            }
            fn read_bytes(b: &[u8]) -> Self {
                bytemuck::pod_read_unaligned(b)
            }
            fn slice_to_bytes(values: &[Self]) -> Vec<u8> {
                bytemuck::cast_slice(values).to_vec()
            }
            fn vec_from_bytes(bytes: &[u8]) -> Vec<Self> {
                // Copies into a vector aligned for `Self` (`bytes` may not be).
                bytemuck::pod_collect_to_vec(bytes)
            }
            fn slice_bytes(values: &[Self]) -> std::borrow::Cow<'_, [u8]> {
                std::borrow::Cow::Borrowed(bytemuck::cast_slice(values))
            }
            fn vec_filled(n: usize, fill: &mut dyn FnMut(&mut [u8]) -> crate::Result<()>) -> crate::Result<Vec<Self>> {
                let mut v: Vec<Self> = bytemuck::zeroed_vec(n);
                fill(bytemuck::cast_slice_mut(&mut v))?;
                Ok(v)
            }
        }
    };
}

pod_element!(f32, DType::F32, |x: f32| x as f64, |v: f64| v as f32);
pod_element!(f64, DType::F64, |x: f64| x, |v: f64| v);
pod_element!(i32, DType::I32, |x: i32| x as f64, |v: f64| v as i32);
pod_element!(u32, DType::U32, |x: u32| x as f64, |v: f64| v as u32);
pod_element!(i64, DType::I64, |x: i64| x as f64, |v: f64| v as i64);
// half's own `from_f64` looks at the top 32 bits of the f64 only, so a value just above a
// tie (its deciding bits below those) rounds the wrong way: f32 1 + 2^-8 + 2^-23 became
// bf16 1.0. Rounding to odd into f32 first keeps the one correct rounding.
pod_element!(f16, DType::F16, |x: f16| x.to_f64(), |v: f64| f16::from_f32(f64_to_f32_odd(v)));
pod_element!(bf16, DType::BF16, |x: bf16| x.to_f64(), |v: f64| bf16::from_f32(f64_to_f32_odd(v)));

/// `v` as `f32` rounded to odd: when inexact, the neighbour whose last bit is 1. Rounding
/// that once more to a format with at least two bits less precision (f16, bf16) equals
/// rounding `v` directly (Boldo & Melquiond, "Emulation of FMA and correctly rounded
/// sums: proved algorithms using rounding to odd", IEEE TC 2008).
pub(crate) fn f64_to_f32_odd(v: f64) -> f32 {
    let r = v as f32;
    if !r.is_finite() || r as f64 == v || r.to_bits() & 1 == 1 {
        return r;
    }
    // Rounded to nearest gave the even neighbour: the odd one lies on v's side.
    if (r as f64) < v { r.next_up() } else { r.next_down() }
}

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    fn to_f64(self) -> f64 {
        if self { 1.0 } else { 0.0 }
    }
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    fn write_bytes(self, out: &mut Vec<u8>) {
        out.push(self as u8);
    }
    fn read_bytes(b: &[u8]) -> Self {
        b[0] != 0
    }
    fn slice_to_bytes(values: &[Self]) -> Vec<u8> {
        // A bool is one byte, 0 or 1: the host layout already.
        bytemuck::cast_slice(values).to_vec()
    }
    fn vec_from_bytes(bytes: &[u8]) -> Vec<Self> {
        // Not a cast: a byte other than 0 or 1 is no valid bool.
        bytes.iter().map(|&b| b != 0).collect()
    }
    fn slice_bytes(values: &[Self]) -> std::borrow::Cow<'_, [u8]> {
        std::borrow::Cow::Borrowed(bytemuck::cast_slice(values))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrowing_rounds_once() {
        // Just above a tie only in the bits half's f64 path ignores.
        let x = 1.0 + 2f64.powi(-8) + 2f64.powi(-23);
        assert_eq!(bf16::from_f64(x).to_f64(), 1.0, "half's own conversion (why we do not use it)");
        assert_eq!(<bf16 as Element>::from_f64(x).to_f64(), 1.0 + 2f64.powi(-7));
        let y = 1.0 + 2f64.powi(-11) + 2f64.powi(-23);
        assert_eq!(<f16 as Element>::from_f64(y).to_f64(), 1.0 + 2f64.powi(-10));
        // Exact ties still go to even; overflow and NaN carry through.
        assert_eq!(<bf16 as Element>::from_f64(1.0 + 2f64.powi(-8)).to_f64(), 1.0);
        assert_eq!(<f16 as Element>::from_f64(1e6).to_f64(), f64::INFINITY);
        assert!(<bf16 as Element>::from_f64(f64::NAN).to_f64().is_nan());
        // f64 values near f32's edges.
        assert_eq!(f64_to_f32_odd(1e-50), f32::from_bits(1));
        assert_eq!(f64_to_f32_odd(-1e300), f32::NEG_INFINITY);
    }

    #[test]
    fn promotion_follows_numpy() {
        use DType::*;
        assert_eq!(promote(Bool, I32), I32);
        assert_eq!(promote(I32, F16), F16);
        assert_eq!(promote(U32, I32), I32);
        assert_eq!(promote(U32, I64), I64);
        assert_eq!(promote(F16, BF16), F32);
        assert_eq!(promote(F32, F64), F64);
        assert_eq!(promote(I64, F32), F32);
        for a in DType::ALL {
            for b in DType::ALL {
                assert_eq!(promote(a, b), promote(b, a));
            }
        }
    }
}
