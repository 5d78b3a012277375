//! Array text as NumPy writes it: [`Display`](std::fmt::Display) is `str(a)` /
//! `print(a)`, [`Debug`](std::fmt::Debug) is `repr(a)`.
//!
//! ```
//! let a = lazuli::Array::from_slice(&[1.0f32, 2.5, -3.0, 4.0], &[2, 2])?;
//! assert_eq!(format!("{a}"), "[[ 1.   2.5]\n [-3.   4. ]]");
//! assert_eq!(format!("{a:?}"), "array([[ 1. ,  2.5],\n       [-3. ,  4. ]], dtype=float32)");
//! assert_eq!(format!("{a:.0}"), "[[ 1.  2.]\n [-3.  4.]]");
//! # Ok::<(), lazuli::Error>(())
//! ```
//!
//! NumPy 2.x's default print options: floats with the shortest digits that read back at
//! the element's precision, at most 8 (or the format's precision, `{:.3}`) after the
//! point, one notation and width per array (scientific when the largest magnitude
//! reaches `1e8` for f64, `1e6` for f32, `1e3` for f16, `1e2` for bf16, when the
//! smallest is below `1e-4`, or when they differ by more than 1000x); `...` in place of
//! all but 3 items per side of each axis once an array has more than 1000 elements;
//! lines wrapped at 75 characters.
//!
//! - `repr` names the dtype where NumPy would for the same dtype: `float32`, `float16`,
//!   `int32`, `uint32`, and not `float64`, `int64` or `bool` (NumPy's defaults), except
//!   for empty arrays. `bfloat16` (not a NumPy dtype) shows `dtype=bfloat16` as
//!   ml_dtypes does, with elements written like NumPy floats at bfloat16's precision
//!   (ml_dtypes itself writes them through `float`'s text).
//! - The text is the same on every device; [`Array::device`] tells where an array lives.
//! - A 0-d array displays as NumPy's scalar `str` (`0.1`, `1.0`, `1e+16`) unless a
//!   precision is given, which applies to it too (`{:.3}` of `1/3` is `0.333`; NumPy
//!   ignores precision for 0-d `str`).
//! - A width pads the whole text (`{:>40}`); other flags are ignored.
//!
//! Formatting evaluates the array and reads it back (only the shown corners of a
//! summarised array are gathered first). A failed evaluation cannot be reported through
//! `fmt::Error` (`println!` would panic), so the text becomes `<error: ...>` instead.

mod float;
mod layout;

use std::fmt::{self, Alignment, Formatter};

use half::{bf16, f16};

use crate::array::Array;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::ops::shape::{SliceArg, concatenate};
use float::{FloatFormat, FloatKind, scalar_str};
use layout::{EDGE_ITEMS, Layout};

/// Arrays with more elements than this are summarised (NumPy's `threshold`).
const THRESHOLD: usize = 1000;
/// Maximum line width (NumPy's `linewidth`).
const LINE_WIDTH: usize = 75;
/// Fractional digits shown at most when the format gives no precision.
const DEFAULT_PRECISION: usize = 8;

/// Host values of the elements shown, widened to one type per kind.
enum Values {
    Bool(Vec<bool>),
    Int(Vec<i64>),
    Float(Vec<f64>, FloatKind),
}

/// What is shown of an array: its (possibly summarised) values and their shape.
struct Shown {
    values: Values,
    shape: Vec<usize>,
    cut: Vec<bool>,
}

fn decode<T: Element>(bytes: &[u8]) -> impl Iterator<Item = T> + '_ {
    bytes.chunks_exact(T::DTYPE.size()).map(T::read_bytes)
}

/// Evaluates `a` and reads back what will be shown: everything, or for an array above
/// [`THRESHOLD`] elements the leading and trailing [`EDGE_ITEMS`] of each long axis
/// (NumPy's `_leading_trailing`), gathered on the array's own stream so only the corners
/// travel to the host.
fn shown(a: &Array) -> Result<Shown> {
    let mut part = a.clone();
    let mut cut = vec![false; a.ndim()];
    if a.size() > THRESHOLD {
        crate::stream::with_stream(&a.stream(), || -> Result<()> {
            for (ax, &n) in a.shape().iter().enumerate() {
                if n > 2 * EDGE_ITEMS {
                    let edge = EDGE_ITEMS as isize;
                    let mut args = vec![SliceArg::all(); ax + 1];
                    args[ax] = (..edge).into();
                    let head = part.slice(&args)?;
                    args[ax] = (-edge..).into();
                    let tail = part.slice(&args)?;
                    part = concatenate(&[&head, &tail], ax as isize)?;
                    cut[ax] = true;
                }
            }
            Ok(())
        })?;
    }
    let bytes = part.to_bytes()?;
    let values = match part.dtype() {
        DType::Bool => Values::Bool(decode::<bool>(&bytes).collect()),
        DType::U32 => Values::Int(decode::<u32>(&bytes).map(i64::from).collect()),
        DType::I32 => Values::Int(decode::<i32>(&bytes).map(i64::from).collect()),
        DType::I64 => Values::Int(decode::<i64>(&bytes).collect()),
        DType::F16 => Values::Float(decode::<f16>(&bytes).map(|v| v.to_f64()).collect(), FloatKind::F16),
        DType::BF16 => Values::Float(decode::<bf16>(&bytes).map(|v| v.to_f64()).collect(), FloatKind::BF16),
        DType::F32 => Values::Float(decode::<f32>(&bytes).map(f64::from).collect(), FloatKind::F32),
        DType::F64 => Values::Float(decode::<f64>(&bytes).collect(), FloatKind::F64),
    };
    Ok(Shown { values, shape: part.shape().to_vec(), cut })
}

/// The element formatter of one array (NumPy's `FloatingFormat`, `IntegerFormat`,
/// `BoolFormat`), built from the shown values.
enum Elements<'a> {
    Bool { values: &'a [bool], true_text: &'static str },
    Int { values: &'a [i64], width: usize },
    Float { values: &'a [f64], format: FloatFormat },
}

impl<'a> Elements<'a> {
    fn new(values: &'a Values, scalar: bool, precision: usize) -> Elements<'a> {
        match values {
            // " True" lines up with "False", except in a 0-d array.
            Values::Bool(v) => Elements::Bool { values: v, true_text: if scalar { "True" } else { " True" } },
            Values::Int(v) => {
                let width = v.iter().map(|x| x.to_string().len()).max().unwrap_or(0);
                Elements::Int { values: v, width }
            }
            Values::Float(v, kind) => {
                Elements::Float { values: v, format: FloatFormat::new(v, *kind, Some(precision)) }
            }
        }
    }

    fn text(&self, i: usize) -> String {
        match self {
            Elements::Bool { values, true_text } => if values[i] { true_text } else { "False" }.to_string(),
            Elements::Int { values, width } => format!("{:>width$}", values[i]),
            Elements::Float { values, format } => format.format(values[i]),
        }
    }
}

/// NumPy's `array2string` of a non-empty array: brackets, elements and wrapping.
fn array2string(s: &Shown, separator: &str, prefix: &str, width: usize, precision: usize) -> String {
    let elements = Elements::new(&s.values, s.shape.is_empty(), precision);
    let next_line_prefix = " ".repeat(1 + prefix.len());
    let layout = Layout { shape: &s.shape, cut: &s.cut, separator, width, next_line_prefix: &next_line_prefix };
    layout.render(&|i| elements.text(i))
}

/// `str(a)`, or `np.array2string(a, precision=p)` with a precision.
fn str_text(a: &Array, precision: Option<usize>) -> Result<String> {
    if a.size() == 0 {
        return Ok("[]".into());
    }
    let s = shown(a)?;
    if a.ndim() == 0 && precision.is_none() {
        return Ok(match &s.values {
            Values::Bool(v) => if v[0] { "True" } else { "False" }.to_string(),
            Values::Int(v) => v[0].to_string(),
            Values::Float(v, kind) => scalar_str(v[0], *kind),
        });
    }
    Ok(array2string(&s, " ", "", LINE_WIDTH, precision.unwrap_or(DEFAULT_PRECISION)))
}

/// A shape as a Python tuple: `()`, `(3,)`, `(2, 3)`.
fn tuple(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => format!("({})", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

/// `repr(a)`.
fn repr_text(a: &Array, precision: Option<usize>) -> Result<String> {
    const PREFIX: &str = "array(";
    let body = if a.size() == 0 {
        "[]".to_string()
    } else {
        // The closing parenthesis counts against the line width.
        array2string(&shown(a)?, ", ", PREFIX, LINE_WIDTH - 1, precision.unwrap_or(DEFAULT_PRECISION))
    };
    let mut extras = Vec::new();
    if (a.size() == 0 && a.shape() != [0]) || a.size() > THRESHOLD {
        extras.push(format!("shape={}", tuple(a.shape())));
    }
    let implied = match a.dtype() {
        DType::Bool | DType::I64 | DType::F64 => true,
        DType::U32 | DType::I32 | DType::F16 | DType::BF16 | DType::F32 => false,
    };
    if !implied || a.size() == 0 {
        extras.push(format!("dtype={}", a.dtype().name()));
    }
    if extras.is_empty() {
        return Ok(format!("{PREFIX}{body})"));
    }
    let text = format!("{PREFIX}{body},");
    let extra = format!("{})", extras.join(", "));
    // The extras go on a new line if they would pass the width on the last one.
    let last_line = text.len() - text.rfind('\n').map_or(0, |i| i + 1);
    let spacer =
        if last_line + extra.len() + 1 > LINE_WIDTH { format!("\n{}", " ".repeat(PREFIX.len())) } else { " ".into() };
    Ok(format!("{text}{spacer}{extra}"))
}

/// Writes `s` padded to the formatter's width, if any.
fn emit(f: &mut Formatter<'_>, s: &str) -> fmt::Result {
    let n = s.chars().count();
    let Some(width) = f.width().filter(|&w| w > n) else { return f.write_str(s) };
    let pad = width - n;
    let (before, after) = match f.align() {
        Some(Alignment::Right) => (pad, 0),
        Some(Alignment::Center) => (pad / 2, pad - pad / 2),
        Some(Alignment::Left) | None => (0, pad),
    };
    let fill = |k: usize| std::iter::repeat_n(f.fill(), k).collect::<String>();
    let (b, a) = (fill(before), fill(after));
    write!(f, "{b}{s}{a}")
}

impl fmt::Display for Array {
    /// NumPy's `str(a)`; see the [`format`](crate::format) module.
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match str_text(self, f.precision()) {
            Ok(s) => emit(f, &s),
            Err(e) => emit(f, &format!("<error: {e}>")),
        }
    }
}

impl fmt::Debug for Array {
    /// NumPy's `repr(a)`; see the [`format`](crate::format) module. A failed read shows
    /// the error with the shape, dtype and device.
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match repr_text(self, f.precision()) {
            Ok(s) => emit(f, &s),
            Err(e) => emit(
                f,
                &format!(
                    "array(<error: {e}>, shape={}, dtype={}, device={})",
                    tuple(self.shape()),
                    self.dtype(),
                    self.device()
                ),
            ),
        }
    }
}
