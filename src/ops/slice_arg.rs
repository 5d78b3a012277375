//! The arguments of [`Array::slice`](crate::Array::slice) and the [`s!`](crate::s) macro
//! that writes them like NumPy's `a[1:3, ::-1, None, ...]`.

use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

/// One entry of [`Array::slice`](crate::Array::slice), with Python's semantics.
///
/// Usually written with [`s!`](crate::s); else from Rust ranges (`(1..3).into()`,
/// `(..).into()`), from an integer (an index, which removes the axis), with
/// [`SliceArg::new`] or [`SliceArg::range`] for a step, or [`NewAxis`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SliceArg {
    /// `a[i]`: picks one position and removes the axis. Negative counts from the end;
    /// out of range is an error.
    Index(isize),
    /// `a[start:stop:step]`: `None` is Python's omitted bound; out-of-range bounds clamp.
    Range {
        /// First position (inclusive).
        start: Option<isize>,
        /// End position (exclusive).
        stop: Option<isize>,
        /// Stride; negative walks backwards; zero is an error.
        step: isize,
    },
    /// `a[None]` / `np.newaxis`: inserts an axis of size 1; consumes no input axis.
    NewAxis,
    /// `a[...]`: as many whole axes as the other arguments leave (at most one per call).
    Ellipsis,
}

/// `np.newaxis` for [`s!`](crate::s) and [`SliceArg`]: `s![.., NewAxis]` (inside `s!` the
/// bare word works without importing this).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NewAxis;

impl From<NewAxis> for SliceArg {
    fn from(_: NewAxis) -> Self {
        SliceArg::NewAxis
    }
}

impl SliceArg {
    /// `start:stop:step`.
    pub fn new(start: Option<isize>, stop: Option<isize>, step: isize) -> SliceArg {
        SliceArg::Range { start, stop, step }
    }
    /// `:` (the whole axis).
    pub fn all() -> SliceArg {
        SliceArg::Range { start: None, stop: None, step: 1 }
    }
    /// A Rust range with a step: `SliceArg::range(1..8, 2)` is `1:8:2`, `(.., -1)` is
    /// `::-1` (what `s![1..8;2]` and `s![..;-1]` build).
    pub fn range(range: impl RangeArg, step: impl SliceInt) -> SliceArg {
        let (start, stop) = range.bounds();
        SliceArg::Range { start, stop, step: step.to_isize() }
    }
}

/// Integers accepted as positions and steps (so literals need no suffix): `i32`, `i64`,
/// `isize`, `u32`, `usize`. Values beyond `isize` saturate, which still clamps or is
/// out of range as any large position.
pub trait SliceInt: Copy {
    /// The value as `isize`, saturating.
    fn to_isize(self) -> isize;
}

macro_rules! slice_ints {
    ($($t:ty),*) => {$(
        impl SliceInt for $t {
            fn to_isize(self) -> isize {
                isize::try_from(self).unwrap_or(if self > 0 { isize::MAX } else { isize::MIN })
            }
        }
        impl From<$t> for SliceArg {
            fn from(i: $t) -> Self {
                SliceArg::Index(i.to_isize())
            }
        }
        impl From<Range<$t>> for SliceArg {
            fn from(r: Range<$t>) -> Self {
                SliceArg::range(r, 1)
            }
        }
        impl From<RangeFrom<$t>> for SliceArg {
            fn from(r: RangeFrom<$t>) -> Self {
                SliceArg::range(r, 1)
            }
        }
        impl From<RangeTo<$t>> for SliceArg {
            fn from(r: RangeTo<$t>) -> Self {
                SliceArg::range(r, 1)
            }
        }
        impl From<RangeInclusive<$t>> for SliceArg {
            fn from(r: RangeInclusive<$t>) -> Self {
                SliceArg::range(r, 1)
            }
        }
        impl From<RangeToInclusive<$t>> for SliceArg {
            fn from(r: RangeToInclusive<$t>) -> Self {
                SliceArg::range(r, 1)
            }
        }
        impl RangeArg for Range<$t> {
            fn bounds(self) -> (Option<isize>, Option<isize>) {
                (Some(self.start.to_isize()), Some(self.end.to_isize()))
            }
        }
        impl RangeArg for RangeFrom<$t> {
            fn bounds(self) -> (Option<isize>, Option<isize>) {
                (Some(self.start.to_isize()), None)
            }
        }
        impl RangeArg for RangeTo<$t> {
            fn bounds(self) -> (Option<isize>, Option<isize>) {
                (None, Some(self.end.to_isize()))
            }
        }
        impl RangeArg for RangeInclusive<$t> {
            fn bounds(self) -> (Option<isize>, Option<isize>) {
                (Some(self.start().to_isize()), inclusive_stop(self.end().to_isize()))
            }
        }
        impl RangeArg for RangeToInclusive<$t> {
            fn bounds(self) -> (Option<isize>, Option<isize>) {
                (None, inclusive_stop(self.end.to_isize()))
            }
        }
    )*};
}

/// The exclusive stop of an inclusive end: `..=-1` runs to the end of the axis.
fn inclusive_stop(end: isize) -> Option<isize> {
    if end == -1 { None } else { Some(end.saturating_add(1)) }
}

/// A Rust range as Python slice bounds (`None` where the range is open).
pub trait RangeArg {
    /// `(start, stop)`, stop exclusive.
    fn bounds(self) -> (Option<isize>, Option<isize>);
}

impl RangeArg for RangeFull {
    fn bounds(self) -> (Option<isize>, Option<isize>) {
        (None, None)
    }
}

impl From<RangeFull> for SliceArg {
    fn from(_: RangeFull) -> Self {
        SliceArg::all()
    }
}

slice_ints!(i32, i64, isize, u32, usize);

/// NumPy-style indexing arguments for [`Array::slice`](crate::Array::slice), as
/// ndarray's `s![]`, giving a `Vec<SliceArg>`:
///
/// | `s![...]` | NumPy | meaning |
/// | --- | --- | --- |
/// | `1..3`, `2..`, `..-1`, `..`, `1..=3` | `1:3`, `2:`, `:-1`, `:`, `1:4` | a range of the axis |
/// | `1..8;2`, `..;-1` | `1:8:2`, `::-1` | a range with a step (Python's meaning for negative steps) |
/// | `2`, `-1` | `2`, `-1` | one position; removes the axis |
/// | `NewAxis` | `None`, `np.newaxis` | inserts an axis of size 1 |
/// | `...` | `...` | the whole axes not named (at most once) |
///
/// `..` is one whole axis (as in ndarray), `...` all the axes left (as in NumPy); axes
/// after the last argument are taken whole. Integer literals need no suffix; variables
/// of type `i32`, `i64`, `isize`, `u32` or `usize` work too.
///
/// ```
/// use lazuli::{Array, s};
/// let a = Array::from_slice(&(0..24).collect::<Vec<i32>>(), &[2, 3, 4])?;
/// let b = a.slice(&s![-1, 1.., ..;-2])?; // a[-1, 1:, ::-2]
/// assert_eq!(b.shape(), &[2, 2]);
/// assert_eq!(b.to_vec::<i32>()?, vec![19, 17, 23, 21]);
/// assert_eq!(a.slice(&s![..., NewAxis, 0])?.shape(), &[2, 3, 1]); // a[..., None, 0]
/// # Ok::<(), lazuli::Error>(())
/// ```
#[macro_export]
macro_rules! s {
    (@acc [$($acc:expr,)*]) => { ::std::vec![$($acc),*] };
    (@acc [$($acc:expr,)*] ... $(, $($rest:tt)*)?) => {
        $crate::s!(@acc [$($acc,)* $crate::SliceArg::Ellipsis,] $($($rest)*)?)
    };
    (@acc [$($acc:expr,)*] NewAxis $(, $($rest:tt)*)?) => {
        $crate::s!(@acc [$($acc,)* $crate::SliceArg::NewAxis,] $($($rest)*)?)
    };
    // With a negative step a "reversed" range (`3..0;-1`) is the point, not a mistake.
    (@acc [$($acc:expr,)*] $e:expr ; $step:expr $(, $($rest:tt)*)?) => {
        $crate::s!(@acc [$($acc,)* $crate::SliceArg::range({
            #[allow(clippy::reversed_empty_ranges)]
            let range = $e;
            range
        }, $step),] $($($rest)*)?)
    };
    (@acc [$($acc:expr,)*] $e:expr $(, $($rest:tt)*)?) => {
        $crate::s!(@acc [$($acc,)* $crate::SliceArg::from($e),] $($($rest)*)?)
    };
    ($($t:tt)*) => { $crate::s!(@acc [] $($t)*) };
}
