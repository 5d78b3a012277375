//! Parameter initialisers on explicit random keys (see [`crate::random`]).
//!
//! Every initialiser is a pure function of its arguments: the same key, shape, dtype
//! and parameters give the same values, on every device. Use a different key for each
//! parameter (split one with [`crate::random::split`]).
//!
//! The scaled initialisers (Glorot, He) take their fans from the shape as PyTorch's
//! `torch.nn.init._calculate_fan_in_and_fan_out` does (see [`fans`]): a shape
//! `[out, in, *receptive]` has `fan_in = in · r` and `fan_out = out · r`, with `r` the
//! product of the receptive dimensions (1 when there are none).
//!
//! ```
//! use lazuli::{DType, nn::init, random};
//! let keys = random::split(&random::key(0)?, 2)?;
//! let w = init::glorot_uniform(&keys.slice(&[0.into()])?, &[64, 32], 1.0, DType::F32)?;
//! let b = init::zeros(&[64], DType::F32)?;
//! let bound = (6.0f32 / (32.0 + 64.0)).sqrt();
//! assert!(w.to_vec::<f32>()?.iter().all(|x| x.abs() <= bound));
//! assert_eq!(b.shape(), [64]);
//! # Ok::<(), lazuli::Error>(())
//! ```

use crate::array::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::random;

/// Which fan scales an initialiser: the inputs (`fan_in`, keeps the variance of the
/// activations in the forward pass) or the outputs (`fan_out`, of the gradients in the
/// backward pass). PyTorch's `mode="fan_in"` and `mode="fan_out"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FanMode {
    /// `fan_in`.
    #[default]
    FanIn,
    /// `fan_out`.
    FanOut,
}

/// `(fan_in, fan_out)` of a weight of `shape` `[out, in, *receptive]`: `in · r` and
/// `out · r`, with `r` the product of the receptive dimensions (PyTorch's
/// `_calculate_fan_in_and_fan_out`). Errors for fewer than 2 dimensions, where fans are
/// not defined.
///
/// ```
/// use lazuli::nn::init::fans;
/// assert_eq!(fans(&[20, 10])?, (10, 20));
/// assert_eq!(fans(&[16, 3, 5, 5])?, (75, 400));
/// assert!(fans(&[10]).is_err());
/// # Ok::<(), lazuli::Error>(())
/// ```
pub fn fans(shape: &[usize]) -> Result<(usize, usize)> {
    fans_for("init.fans", shape)
}

fn fans_for(op: &'static str, shape: &[usize]) -> Result<(usize, usize)> {
    if shape.len() < 2 {
        return Err(Error::shape(
            op,
            format!(
                "fans are defined for weights of 2 or more dimensions ([out, in, *receptive]), got shape {shape:?}; \
                 initialise biases and other vectors with uniform, normal or zeros"
            ),
        ));
    }
    let receptive: usize = shape[2..].iter().product();
    Ok((shape[1] * receptive, shape[0] * receptive))
}

/// Errors unless `dtype` is a float dtype (before any other check, so a wrong dtype is
/// reported as such).
fn check_float(op: &'static str, dtype: DType) -> Result<()> {
    if !dtype.is_float() {
        return Err(Error::dtype(
            op,
            dtype,
            "initial weights are floating point (float16, bfloat16, float32, float64)",
        ));
    }
    Ok(())
}

fn check_gain(op: &'static str, gain: f64) -> Result<()> {
    if !(gain.is_finite() && gain > 0.0) {
        return Err(Error::invalid(op, format!("gain must be finite and > 0, got {gain}")));
    }
    Ok(())
}

/// `U(-bound, bound)` of `shape`. With nothing to sample the bound may be infinite (a
/// fan of 0): any valid one gives the same empty array, after the key is checked.
fn symmetric_uniform(key: &Array, shape: &[usize], bound: f64, dtype: DType) -> Result<Array> {
    if shape.contains(&0) {
        return random::uniform(key, shape, -1.0, 1.0, dtype);
    }
    random::uniform(key, shape, -bound, bound, dtype)
}

/// `N(0, std²)` of `shape` (with nothing to sample, as [`symmetric_uniform`]).
fn centred_normal(key: &Array, shape: &[usize], std: f64, dtype: DType) -> Result<Array> {
    if shape.contains(&0) {
        return random::normal(key, shape, 0.0, 1.0, dtype);
    }
    random::normal(key, shape, 0.0, std, dtype)
}

/// Samples uniform in `[low, high)`, as [`random::uniform`]: same key, same values.
pub fn uniform(key: &Array, shape: &[usize], low: f64, high: f64, dtype: DType) -> Result<Array> {
    random::uniform(key, shape, low, high, dtype)
}

/// Normal samples with `mean` and standard deviation `std`, as [`random::normal`]: same
/// key, same values.
pub fn normal(key: &Array, shape: &[usize], mean: f64, std: f64, dtype: DType) -> Result<Array> {
    random::normal(key, shape, mean, std, dtype)
}

/// Zeros (biases, usually); no key needed.
pub fn zeros(shape: &[usize], dtype: DType) -> Result<Array> {
    crate::zeros(shape, dtype)
}

/// Ones (normalisation scales, usually); no key needed.
pub fn ones(shape: &[usize], dtype: DType) -> Result<Array> {
    crate::ones(shape, dtype)
}

/// `value` everywhere; no key needed.
pub fn constant(shape: &[usize], value: f64, dtype: DType) -> Result<Array> {
    crate::full(shape, value, dtype)
}

/// Glorot (Xavier) uniform: `U(-a, a)` with `a = gain · √(6 / (fan_in + fan_out))`,
/// PyTorch's `xavier_uniform_(w, gain)`. Use `gain = 1` for linear and sigmoid layers
/// (PyTorch's `calculate_gain` gives others: 5/3 for tanh, √2 for ReLU). Errors for
/// rank < 2, a non-float dtype, or a gain that is not finite and > 0.
pub fn glorot_uniform(key: &Array, shape: &[usize], gain: f64, dtype: DType) -> Result<Array> {
    const OP: &str = "init.glorot_uniform";
    check_float(OP, dtype)?;
    check_gain(OP, gain)?;
    let (fan_in, fan_out) = fans_for(OP, shape)?;
    let bound = gain * (6.0 / (fan_in + fan_out) as f64).sqrt();
    symmetric_uniform(key, shape, bound, dtype)
}

/// Glorot (Xavier) normal: `N(0, σ²)` with `σ = gain · √(2 / (fan_in + fan_out))`,
/// PyTorch's `xavier_normal_(w, gain)`. Errors as [`glorot_uniform`].
pub fn glorot_normal(key: &Array, shape: &[usize], gain: f64, dtype: DType) -> Result<Array> {
    const OP: &str = "init.glorot_normal";
    check_float(OP, dtype)?;
    check_gain(OP, gain)?;
    let (fan_in, fan_out) = fans_for(OP, shape)?;
    let std = gain * (2.0 / (fan_in + fan_out) as f64).sqrt();
    centred_normal(key, shape, std, dtype)
}

/// He (Kaiming) uniform for ReLU layers: `U(-a, a)` with `a = √(6 / fan)`, `fan` the
/// fan `mode` picks; PyTorch's `kaiming_uniform_(w, a=0, mode, nonlinearity="relu")`
/// (its gain √2 times `√(3 / fan)`). Errors for rank < 2 or a non-float dtype.
pub fn he_uniform(key: &Array, shape: &[usize], mode: FanMode, dtype: DType) -> Result<Array> {
    const OP: &str = "init.he_uniform";
    check_float(OP, dtype)?;
    let fan = pick(fans_for(OP, shape)?, mode);
    let bound = (6.0 / fan as f64).sqrt();
    symmetric_uniform(key, shape, bound, dtype)
}

/// He (Kaiming) normal for ReLU layers: `N(0, σ²)` with `σ = √(2 / fan)`, `fan` the fan
/// `mode` picks; PyTorch's `kaiming_normal_(w, a=0, mode, nonlinearity="relu")`. Errors
/// as [`he_uniform`].
pub fn he_normal(key: &Array, shape: &[usize], mode: FanMode, dtype: DType) -> Result<Array> {
    const OP: &str = "init.he_normal";
    check_float(OP, dtype)?;
    let fan = pick(fans_for(OP, shape)?, mode);
    let std = (2.0 / fan as f64).sqrt();
    centred_normal(key, shape, std, dtype)
}

fn pick((fan_in, fan_out): (usize, usize), mode: FanMode) -> usize {
    match mode {
        FanMode::FanIn => fan_in,
        FanMode::FanOut => fan_out,
    }
}
