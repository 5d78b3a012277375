//! The patterns of issue 11 (the 5-op chain, gelu in its tanh form, layer_norm), built op
//! by op through the public API: shared by `examples/fusion_bench.rs` and `benches/fusion.rs`,
//! so the table and the criterion bench time the same graphs.

use lazuli::{Array, DType, Result};

/// A standard-normal f32 array of `shape`, computed (resident on the current stream).
pub fn randn(seed: u64, shape: &[usize]) -> Result<Array> {
    let key = lazuli::random::key(seed)?;
    let x = lazuli::random::normal(&key, shape, 0.0, 1.0, DType::F32)?;
    x.eval()?;
    Ok(x)
}

/// `tanh(exp(a * b + c) * 0.5)`: five elementwise ops.
pub fn chain(a: &Array, b: &Array, c: &Array) -> Result<Array> {
    ((&(a * b)? + c)?.exp()? * 0.5)?.tanh()
}

/// gelu in its tanh form: `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
pub fn gelu_tanh(x: &Array) -> Result<Array> {
    let inner = (&(x + &(&(x * x)? * x)?.mul(0.044715)?)? * (2.0 / std::f64::consts::PI).sqrt())?;
    &(x * 0.5)? * &(&inner.tanh()? + 1.0)?
}

/// Layer norm over the last axis, with gain `g` and bias `b`.
pub fn layer_norm(x: &Array, g: &Array, b: &Array) -> Result<Array> {
    let mean = x.mean(&[-1], true)?;
    let var = x.var(&[-1], true, 0)?;
    let y = (&(x - &mean)? / &(&var + 1e-5)?.sqrt()?)?;
    &(&y * g)? + b
}
