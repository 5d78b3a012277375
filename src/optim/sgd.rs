//! Stochastic gradient descent with momentum, PyTorch's `torch.optim.SGD`.

use crate::array::Array;
use crate::error::{Error, Result};
use crate::params::Params;

use super::{Optimizer, check_grads, check_moments, check_non_negative, commit, split_state, step_array};

/// Stochastic gradient descent with optional momentum, Nesterov momentum, dampening and
/// (coupled, L2) weight decay: PyTorch's `torch.optim.SGD`. At step `t` (from 1), for
/// each parameter `θ` with gradient `g`, learning rate `γ`, momentum `μ`, dampening `τ`
/// and weight decay `λ`:
///
/// ```text
/// g ← g + λ θ                       if λ ≠ 0
/// if μ ≠ 0:
///     b ← g                         at t = 1 (no momentum buffer yet)
///     b ← μ b + (1 − τ) g           after
///     g ← g + μ b                   if nesterov
///     g ← b                         otherwise
/// θ ← θ − γ g
/// ```
///
/// The momentum buffers `b` have the parameters' dtypes; they appear in
/// [`Optimizer::state`] as `"momentum_buffer.<name>"`. Nesterov momentum needs `μ > 0`
/// and `τ = 0` (as PyTorch).
///
/// ```
/// use lazuli::optim::{Optimizer, Sgd};
/// let mut opt = Sgd::new(0.1).with_momentum(0.9).with_nesterov(true);
/// let mut w = [lazuli::Array::from_slice(&[1.0f32], &[1])?];
/// let g = [lazuli::Array::from_slice(&[2.0f32], &[1])?];
/// opt.update_slice(&mut w, &g)?;
/// // b = g = 2, g + μ b = 3.8, θ = 1 − 0.1 · 3.8.
/// assert!((w[0].item::<f32>()? - 0.62).abs() < 1e-6);
/// # Ok::<(), lazuli::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Sgd {
    /// Learning rate `γ` (>= 0).
    pub lr: f64,
    /// Momentum factor `μ` (>= 0; 0 disables momentum and its buffers).
    pub momentum: f64,
    /// Dampening `τ` of the gradient in the momentum buffer (>= 0).
    pub dampening: f64,
    /// Nesterov momentum (needs `momentum > 0` and `dampening == 0`).
    pub nesterov: bool,
    /// L2 penalty `λ` added to the gradient (>= 0).
    pub weight_decay: f64,
    step: u64,
    /// The step count as the state reports it; `None` before the first step.
    step_array: Option<Array>,
    buffers: Params,
}

impl Sgd {
    /// Plain SGD with learning rate `lr`: no momentum, dampening or weight decay.
    pub fn new(lr: f64) -> Sgd {
        Sgd {
            lr,
            momentum: 0.0,
            dampening: 0.0,
            nesterov: false,
            weight_decay: 0.0,
            step: 0,
            step_array: None,
            buffers: Params::new(),
        }
    }

    /// With momentum factor `momentum`.
    pub fn with_momentum(mut self, momentum: f64) -> Sgd {
        self.momentum = momentum;
        self
    }

    /// With dampening `dampening`.
    pub fn with_dampening(mut self, dampening: f64) -> Sgd {
        self.dampening = dampening;
        self
    }

    /// With Nesterov momentum on or off.
    pub fn with_nesterov(mut self, nesterov: bool) -> Sgd {
        self.nesterov = nesterov;
        self
    }

    /// With weight decay `weight_decay`.
    pub fn with_weight_decay(mut self, weight_decay: f64) -> Sgd {
        self.weight_decay = weight_decay;
        self
    }

    fn check_hyperparameters(&self, op: &'static str) -> Result<()> {
        check_non_negative(op, "the learning rate", self.lr)?;
        check_non_negative(op, "momentum", self.momentum)?;
        check_non_negative(op, "dampening", self.dampening)?;
        check_non_negative(op, "weight_decay", self.weight_decay)?;
        if self.nesterov && (self.momentum <= 0.0 || self.dampening != 0.0) {
            return Err(Error::invalid(
                op,
                format!(
                    "Nesterov momentum needs momentum > 0 and dampening = 0, got momentum {} and dampening {}",
                    self.momentum, self.dampening
                ),
            ));
        }
        Ok(())
    }
}

impl Optimizer for Sgd {
    fn update(&mut self, params: &mut Params, grads: &Params) -> Result<()> {
        const OP: &str = "Sgd::update";
        self.check_hyperparameters(OP)?;
        check_grads(OP, params, grads)?;
        let use_momentum = self.momentum != 0.0;
        // No buffers yet (first step, or momentum turned on later) means `b ← g` for all.
        if use_momentum && !self.buffers.is_empty() {
            check_moments(OP, "momentum buffers", &self.buffers, params)?;
        }
        let (mu, tau, lambda) = (self.momentum, self.dampening, self.weight_decay);
        let mut new_params = Vec::with_capacity(params.len());
        let mut new_buffers = Params::new();
        for ((name, p), g) in params.iter().zip(grads.values()) {
            // On the parameter's own stream (see Adam).
            crate::with_stream(&p.stream(), || -> Result<()> {
                let mut d = g.clone();
                if lambda != 0.0 {
                    d = d.add(&p.mul(lambda)?)?;
                }
                if use_momentum {
                    let b = match self.buffers.get(name) {
                        None => d.clone(),
                        Some(b) if tau == 0.0 => b.mul(mu)?.add(&d)?,
                        Some(b) => b.mul(mu)?.add(&d.mul(1.0 - tau)?)?,
                    };
                    d = if self.nesterov { d.add(&b.mul(mu)?)? } else { b.clone() };
                    new_buffers.insert(name, b);
                }
                new_params.push(p.sub(&d.mul(self.lr)?)?);
                Ok(())
            })?;
        }
        let step_array = step_array(self.step + 1)?;
        // Everything is built: nothing below fails, so an error above changed nothing.
        commit(params, new_params);
        if use_momentum {
            self.buffers = new_buffers;
        }
        self.step += 1;
        self.step_array = Some(step_array);
        Ok(())
    }

    fn state(&self) -> Params {
        let mut state = self.buffers.with_prefix("momentum_buffer");
        if let Some(step) = &self.step_array {
            state.insert("step", step.clone());
        }
        state
    }

    fn load_state(&mut self, state: Params) -> Result<()> {
        const OP: &str = "Sgd::load_state";
        let mut split = split_state(OP, state, &["momentum_buffer"])?;
        let step_array = if split.step > 0 { Some(step_array(split.step)?) } else { None };
        self.step = split.step;
        self.step_array = step_array;
        self.buffers = split.groups.remove(0);
        Ok(())
    }

    fn step_count(&self) -> u64 {
        self.step
    }

    fn learning_rate(&self) -> f64 {
        self.lr
    }

    fn set_learning_rate(&mut self, lr: f64) {
        self.lr = lr;
    }
}
