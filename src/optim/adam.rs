//! Adam and AdamW, PyTorch's `torch.optim.Adam` and `torch.optim.AdamW`.

use crate::array::Array;
use crate::error::{Error, Result};
use crate::params::Params;

use super::{
    Optimizer, check_grads, check_moments, check_non_negative, check_paired, check_unit, commit, split_state,
    step_array,
};

/// What Adam and AdamW carry between steps.
#[derive(Debug, Clone, Default)]
struct Moments {
    step: u64,
    /// The step count as the state reports it; `None` before the first step.
    step_array: Option<Array>,
    m: Params,
    v: Params,
}

/// The hyperparameters of one update.
struct Config {
    lr: f64,
    betas: (f64, f64),
    eps: f64,
    weight_decay: f64,
    /// AdamW's decoupled decay instead of Adam's L2 penalty.
    decoupled: bool,
}

impl Moments {
    fn update(&mut self, op: &'static str, c: &Config, params: &mut Params, grads: &Params) -> Result<()> {
        check_non_negative(op, "the learning rate", c.lr)?;
        check_unit(op, "betas.0", c.betas.0)?;
        check_unit(op, "betas.1", c.betas.1)?;
        check_non_negative(op, "eps", c.eps)?;
        check_non_negative(op, "weight_decay", c.weight_decay)?;
        check_grads(op, params, grads)?;
        let fresh = self.m.is_empty() && self.v.is_empty();
        if fresh && self.step > 0 && !params.is_empty() {
            // Zero moments with a bias correction for step t > 1 would not be Adam.
            return Err(Error::invalid(
                op,
                format!(
                    "the state has taken {} steps but holds no moments; load a state with its \"m.*\" and \"v.*\" entries",
                    self.step
                ),
            ));
        }
        if !fresh {
            check_moments(op, "first moments", &self.m, params)?;
            check_moments(op, "second moments", &self.v, params)?;
        }
        let (b1, b2) = c.betas;
        let t = self.step + 1;
        // Host scalars in f64, as PyTorch computes them in Python floats.
        let bias_correction1 = 1.0 - b1.powf(t as f64);
        let bias_correction2 = 1.0 - b2.powf(t as f64);
        let step_size = c.lr / bias_correction1;
        let bias_correction2_sqrt = bias_correction2.sqrt();
        let mut new_params = Vec::with_capacity(params.len());
        let (mut new_m, mut new_v) = (Params::new(), Params::new());
        for ((name, p), g) in params.iter().zip(grads.values()) {
            // On the parameter's own stream: the update runs where the parameter lives,
            // whatever stream the caller has current.
            crate::with_stream(&p.stream(), || -> Result<()> {
                let mut p = p.clone();
                let mut g = g.clone();
                if c.weight_decay != 0.0 {
                    if c.decoupled {
                        p = p.mul(1.0 - c.lr * c.weight_decay)?;
                    } else {
                        g = g.add(&p.mul(c.weight_decay)?)?;
                    }
                }
                // The previous moments are zero at the first step: the sums reduce to one term.
                let gm = g.mul(1.0 - b1)?;
                let gv = g.mul(&g)?.mul(1.0 - b2)?;
                let (m, v) =
                    if fresh { (gm, gv) } else { (self.m[name].mul(b1)?.add(&gm)?, self.v[name].mul(b2)?.add(&gv)?) };
                let denom = v.sqrt()?.div(bias_correction2_sqrt)?.add(c.eps)?;
                new_params.push(p.sub(&m.div(&denom)?.mul(step_size)?)?);
                new_m.insert(name, m);
                new_v.insert(name, v);
                Ok(())
            })?;
        }
        let step_array = step_array(t)?;
        // Everything is built: nothing below fails, so an error above changed nothing.
        commit(params, new_params);
        *self = Moments { step: t, step_array: Some(step_array), m: new_m, v: new_v };
        Ok(())
    }

    fn state(&self) -> Params {
        let mut state = self.m.with_prefix("m");
        state.extend(self.v.with_prefix("v"));
        if let Some(step) = &self.step_array {
            state.insert("step", step.clone());
        }
        state
    }

    fn load(op: &'static str, state: Params) -> Result<Moments> {
        let mut split = split_state(op, state, &["m", "v"])?;
        let v = split.groups.remove(1);
        let m = split.groups.remove(0);
        check_paired(op, ("m", &m), ("v", &v))?;
        let step_array = if split.step > 0 { Some(step_array(split.step)?) } else { None };
        Ok(Moments { step: split.step, step_array, m, v })
    }
}

/// Adam (Kingma and Ba), PyTorch's `torch.optim.Adam` (without `amsgrad`). At step `t`
/// (from 1), for each parameter `θ` with gradient `g`, learning rate `γ`, betas
/// `(β₁, β₂)`, `eps` `ε` and weight decay `λ`, with `m` and `v` starting at 0:
///
/// ```text
/// g ← g + λ θ                       if λ ≠ 0 (an L2 penalty; see AdamW for decoupled decay)
/// m ← β₁ m + (1 − β₁) g
/// v ← β₂ v + (1 − β₂) g²
/// θ ← θ − (γ / (1 − β₁ᵗ)) · m / (√v / √(1 − β₂ᵗ) + ε)
/// ```
///
/// which is `θ − γ m̂ / (√v̂ + ε)` with the bias-corrected `m̂ = m / (1 − β₁ᵗ)` and
/// `v̂ = v / (1 − β₂ᵗ)`, grouped as PyTorch computes it (the bias corrections are host
/// scalars in f64). The moments have the parameters' dtypes; they appear in
/// [`Optimizer::state`] as `"m.<name>"` and `"v.<name>"`.
///
/// Defaults ([`Adam::default`]): `lr = 1e-3`, `betas = (0.9, 0.999)`, `eps = 1e-8`,
/// `weight_decay = 0`.
#[derive(Debug, Clone)]
pub struct Adam {
    /// Learning rate `γ` (>= 0).
    pub lr: f64,
    /// Decay rates `(β₁, β₂)` of the first and second moments, each in `[0, 1)`.
    pub betas: (f64, f64),
    /// Added to the denominator for stability (>= 0).
    pub eps: f64,
    /// L2 penalty `λ` added to the gradient (>= 0).
    pub weight_decay: f64,
    state: Moments,
}

impl Adam {
    /// Adam with learning rate `lr` and PyTorch's other defaults.
    pub fn new(lr: f64) -> Adam {
        Adam { lr, betas: (0.9, 0.999), eps: 1e-8, weight_decay: 0.0, state: Moments::default() }
    }

    /// With (L2) weight decay `weight_decay`.
    pub fn with_weight_decay(mut self, weight_decay: f64) -> Adam {
        self.weight_decay = weight_decay;
        self
    }
}

/// AdamW (Loshchilov and Hutter), PyTorch's `torch.optim.AdamW` (without `amsgrad`):
/// [`Adam`] with the weight decay decoupled from the gradient. At step `t`:
///
/// ```text
/// θ ← θ (1 − γ λ)
/// m ← β₁ m + (1 − β₁) g
/// v ← β₂ v + (1 − β₂) g²
/// θ ← θ − (γ / (1 − β₁ᵗ)) · m / (√v / √(1 − β₂ᵗ) + ε)
/// ```
///
/// The state is Adam's (`"step"`, `"m.<name>"`, `"v.<name>"`), so either can load the
/// other's.
///
/// Defaults ([`AdamW::default`]): `lr = 1e-3`, `betas = (0.9, 0.999)`, `eps = 1e-8`,
/// `weight_decay = 1e-2`.
#[derive(Debug, Clone)]
pub struct AdamW {
    /// Learning rate `γ` (>= 0).
    pub lr: f64,
    /// Decay rates `(β₁, β₂)` of the first and second moments, each in `[0, 1)`.
    pub betas: (f64, f64),
    /// Added to the denominator for stability (>= 0).
    pub eps: f64,
    /// Decoupled weight decay `λ` (>= 0): each step scales the parameters by `1 − γ λ`.
    pub weight_decay: f64,
    state: Moments,
}

impl AdamW {
    /// AdamW with learning rate `lr` and PyTorch's other defaults (`weight_decay = 1e-2`).
    pub fn new(lr: f64) -> AdamW {
        AdamW { lr, betas: (0.9, 0.999), eps: 1e-8, weight_decay: 1e-2, state: Moments::default() }
    }

    /// With decoupled weight decay `weight_decay`.
    pub fn with_weight_decay(mut self, weight_decay: f64) -> AdamW {
        self.weight_decay = weight_decay;
        self
    }
}

/// What Adam and AdamW share: the builders for betas and eps, `Default` (`new(1e-3)`) and
/// the [`Optimizer`] impl over [`Moments`]; they differ only in how weight decay applies.
macro_rules! adam_family {
    ($t:ident, decoupled: $decoupled:expr) => {
        impl Default for $t {
            fn default() -> $t {
                $t::new(1e-3)
            }
        }

        impl $t {
            /// With moment decay rates `betas`.
            pub fn with_betas(mut self, beta1: f64, beta2: f64) -> $t {
                self.betas = (beta1, beta2);
                self
            }

            /// With `eps`.
            pub fn with_eps(mut self, eps: f64) -> $t {
                self.eps = eps;
                self
            }

            fn config(&self) -> Config {
                let (lr, betas, eps, weight_decay) = (self.lr, self.betas, self.eps, self.weight_decay);
                Config { lr, betas, eps, weight_decay, decoupled: $decoupled }
            }
        }

        impl Optimizer for $t {
            fn update(&mut self, params: &mut Params, grads: &Params) -> Result<()> {
                let config = self.config();
                self.state.update(concat!(stringify!($t), "::update"), &config, params, grads)
            }

            fn state(&self) -> Params {
                self.state.state()
            }

            fn load_state(&mut self, state: Params) -> Result<()> {
                self.state = Moments::load(concat!(stringify!($t), "::load_state"), state)?;
                Ok(())
            }

            fn step_count(&self) -> u64 {
                self.state.step
            }

            fn learning_rate(&self) -> f64 {
                self.lr
            }

            fn set_learning_rate(&mut self, lr: f64) {
                self.lr = lr;
            }
        }
    };
}

adam_family!(Adam, decoupled: false);
adam_family!(AdamW, decoupled: true);
