//! Typed slices of CPU data for the fused interpreter ([`super::fused`]): [`Dst`], where a
//! step writes (a scratch buffer's first elements, or a chunk of an output), and [`Src`],
//! what a step reads (an input, a scratch buffer, or an extra output's chunk).

use super::storage::{CpuData, CpuElem, with_data};
use crate::dtype::DType;

/// A step's output slice: a scratch buffer's first elements or a chunk of the output.
#[allow(missing_docs)]
pub(super) enum Dst<'a> {
    Bool(&'a mut [bool]),
    U32(&'a mut [u32]),
    I32(&'a mut [i32]),
    I64(&'a mut [i64]),
    F16(&'a mut [half::f16]),
    BF16(&'a mut [half::bf16]),
    F32(&'a mut [f32]),
    F64(&'a mut [f64]),
}

/// Runs `$body` with `$o` bound to the typed slice of a [`Dst`].
macro_rules! with_dst {
    ($dst:expr, |$o:ident| $body:expr) => {
        $crate::backend::cpu::storage::match_elems!(Dst, $dst, |$o| $body)
    };
}
pub(super) use with_dst;

impl Dst<'_> {
    /// Elements `from..from + len`, for as long as this borrow.
    #[inline]
    pub(super) fn sub(&mut self, from: usize, len: usize) -> Dst<'_> {
        with_dst!(self, |o| Dst::from(&mut o[from..from + len]))
    }

    /// The number of elements.
    #[inline]
    pub(super) fn len(&self) -> usize {
        with_dst!(self, |o| o.len())
    }

    /// The same elements, for as long as this borrow (to write them and keep the slice).
    #[inline]
    pub(super) fn reborrow(&mut self) -> Dst<'_> {
        with_dst!(self, |o| Dst::from(&mut o[..]))
    }

    /// The elements, to read.
    #[inline]
    pub(super) fn src(&self) -> Src<'_> {
        with_dst!(self, |o| Src::from(&o[..]))
    }
}

/// A value's elements to read: all of an input or a scratch buffer, or an extra output's
/// chunk.
#[derive(Clone, Copy)]
#[allow(missing_docs)]
pub(super) enum Src<'a> {
    Bool(&'a [bool]),
    U32(&'a [u32]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    F16(&'a [half::f16]),
    BF16(&'a [half::bf16]),
    F32(&'a [f32]),
    F64(&'a [f64]),
}

/// Runs `$body` with `$v` bound to the typed slice of a [`Src`].
macro_rules! with_src {
    ($src:expr, |$v:ident| $body:expr) => {
        $crate::backend::cpu::storage::match_elems!(Src, $src, |$v| $body)
    };
}
pub(super) use with_src;

impl<'a> Src<'a> {
    /// All of `d`.
    #[inline]
    pub(super) fn of(d: &'a CpuData) -> Self {
        with_data!(d, |v| Src::from(&v[..]))
    }

    /// The elements' dtype.
    pub(super) fn dtype(self) -> DType {
        match self {
            Src::Bool(_) => DType::Bool,
            Src::U32(_) => DType::U32,
            Src::I32(_) => DType::I32,
            Src::I64(_) => DType::I64,
            Src::F16(_) => DType::F16,
            Src::BF16(_) => DType::BF16,
            Src::F32(_) => DType::F32,
            Src::F64(_) => DType::F64,
        }
    }
}

/// An element type whose slices convert to and from [`Src`] and [`Dst`].
pub(super) trait SrcElem: CpuElem {
    /// The slice, if `s` holds this type.
    fn unwrap_src(s: Src<'_>) -> Option<&[Self]>;
}

/// Implements [`SrcElem`] and the slice conversions of [`Src`] and [`Dst`] for each
/// element type and its variant.
macro_rules! src_elem {
    ($($t:ty => $var:ident),* $(,)?) => {$(
        impl SrcElem for $t {
            #[inline]
            fn unwrap_src(s: Src<'_>) -> Option<&[Self]> {
                if let Src::$var(v) = s { Some(v) } else { None }
            }
        }
        impl<'a> From<&'a [$t]> for Src<'a> {
            #[inline]
            fn from(v: &'a [$t]) -> Self {
                Src::$var(v)
            }
        }
        impl<'a> From<&'a mut [$t]> for Dst<'a> {
            #[inline]
            fn from(v: &'a mut [$t]) -> Self {
                Dst::$var(v)
            }
        }
    )*};
}

src_elem!(bool => Bool, u32 => U32, i32 => I32, i64 => I64, half::f16 => F16, half::bf16 => BF16, f32 => F32, f64 => F64);

/// The first `len` elements of a scratch buffer, as a step's output.
#[inline]
pub(super) fn dst(d: &mut CpuData, len: usize) -> Dst<'_> {
    with_data!(d, |v| Dst::from(&mut v[..len]))
}

/// `d` cut into slices of `size` elements.
pub(super) fn chunks(d: &mut CpuData, size: usize) -> Vec<Dst<'_>> {
    with_data!(d, |v| v.chunks_mut(size).map(Dst::from).collect())
}
