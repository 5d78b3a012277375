//! Helpers the derivative rules share.

use crate::array::Array;
use crate::error::Result;

/// A local derivative `d output / d input` of an elementwise primitive, kept symbolic
/// where it is a constant so that `add`'s rule costs no multiply.
pub(crate) enum Partial {
    /// Zero: the input gets no gradient.
    Zero,
    /// A constant factor (1 for `add`, -1 for `sub`).
    Scale(f64),
    /// `g * d`.
    Times(Array),
    /// `g / d` (division is kept as such: `g * (1 / d)` would round twice).
    Over(Array),
}

impl Partial {
    /// `g` times this derivative, or `None` for zero.
    pub(crate) fn apply(&self, g: &Array) -> Result<Option<Array>> {
        Ok(Some(match self {
            Partial::Zero => return Ok(None),
            Partial::Scale(s) if *s == 1.0 => g.clone(),
            Partial::Scale(s) => g.mul(*s)?,
            Partial::Times(d) => g.mul(d)?,
            Partial::Over(d) => g.div(d)?,
        }))
    }
}

/// Sums `g` (of a broadcast output's shape) down to `shape`, the shape of an input that
/// was broadcast to it: over the leading axes the input lacked and over the axes where
/// it had size 1.
pub(crate) fn unbroadcast(g: &Array, shape: &[usize]) -> Result<Array> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    let lead = g.ndim() - shape.len();
    let axes: Vec<isize> = (0..g.ndim())
        .filter(|&i| i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1))
        .map(|i| i as isize)
        .collect();
    let summed = if axes.is_empty() { g.clone() } else { g.sum(&axes, true)? };
    summed.reshape_to(shape.to_vec())
}

/// Adds two optional contributions (`None` is zero).
pub(crate) fn add_opt(a: Option<Array>, b: Option<Array>) -> Result<Option<Array>> {
    Ok(match (a, b) {
        (Some(a), Some(b)) => Some(a.add(&b)?),
        (a, None) => a,
        (None, b) => b,
    })
}

/// `t` broadcast to `shape`, or `None` for a zero tangent.
pub(crate) fn broadcast_opt(t: Option<Array>, shape: &[usize]) -> Result<Option<Array>> {
    t.map(|t| if t.shape() == shape { Ok(t) } else { t.broadcast_to(shape) }).transpose()
}

/// A tangent or cotangent, `None` (zero) made explicit as zeros of `like`'s shape and dtype.
pub(crate) fn or_zeros(d: Option<Array>, like: &Array) -> Result<Array> {
    match d {
        Some(d) => Ok(d),
        None => like.zeros_like(),
    }
}
