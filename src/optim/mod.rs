//! Optimisers: [`Sgd`], [`Adam`], [`AdamW`], with PyTorch's update rules
//! (`torch.optim.SGD`, `Adam`, `AdamW`, without `amsgrad`, `maximize` or per-group
//! options; each type documents its formulas).
//!
//! An optimiser turns gradients into new parameters: [`Optimizer::update`] replaces
//! each array of a [`Params`] by its updated value, built from lazy ops. Nothing is
//! evaluated: evaluate the parameters (which evaluates the optimiser's moments they
//! depend on) once per step, as any other output.
//!
//! ```
//! use lazuli::optim::{Adam, Optimizer};
//! use lazuli::{Array, Params};
//! let mut params = Params::new();
//! params.insert("w", Array::from_slice(&[1.0f32, -2.0], &[2])?);
//! let loss = |p: &Params| p["w"].square()?.sum(&[], false);
//! let mut opt = Adam::new(0.1);
//! for _ in 0..3 {
//!     let grads = lazuli::transforms::grad_params(loss)(&params)?;
//!     opt.update(&mut params, &grads)?;
//!     params.eval()?;
//! }
//! // Adam's first steps move each weight by about lr, whatever the gradient's scale.
//! let w = params["w"].to_vec::<f32>()?;
//! assert!((w[0] - 0.7).abs() < 1e-2 && (w[1] + 1.7).abs() < 1e-2);
//! # Ok::<(), lazuli::Error>(())
//! ```
//!
//! # State
//!
//! [`Optimizer::state`] returns everything an optimiser carries between steps as a
//! [`Params`], ready to be saved with the model: `"step"`, the number of updates taken
//! (a 0-d `int64` array), and the per-parameter moments under prefixed names
//! (`"m.<name>"` and `"v.<name>"` for Adam, `"momentum_buffer.<name>"` for SGD), each
//! with its parameter's shape and dtype. A fresh optimiser's state is empty (as in
//! PyTorch). [`Optimizer::load_state`] takes such a collection back, so that training
//! continues exactly as if it had not stopped.
//!
//! # Errors
//!
//! `update` checks everything before it changes anything, and returns `Err` (leaving
//! parameters and state as they were) for: gradients whose names, shapes or dtypes do
//! not match the parameters; non-float parameters; state moments that do not match the
//! parameters; and hyperparameters out of range (a negative or non-finite learning rate,
//! a beta outside `[0, 1)`, ...). The hyperparameters are public fields, so that a
//! schedule can change them between steps; they are checked at each update.

mod adam;
mod sgd;

pub use adam::{Adam, AdamW};
pub use sgd::Sgd;

use crate::array::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::params::Params;

/// What every optimiser does: update parameters from gradients, and save and restore
/// what it carries between steps.
pub trait Optimizer {
    /// Replaces each of `params` by its updated value given `grads` (the same names,
    /// shapes and dtypes), and advances the step count. The new arrays are lazy. On
    /// `Err`, nothing has changed.
    fn update(&mut self, params: &mut Params, grads: &Params) -> Result<()>;

    /// [`Optimizer::update`] for parameters kept in a slice: `grads[i]` is the gradient
    /// of `params[i]`. The state names the parameters by their index (`"0"`, `"1"`...,
    /// zero-padded to one width so that name order is index order), so keep using the
    /// same slice layout with one optimiser.
    fn update_slice(&mut self, params: &mut [Array], grads: &[Array]) -> Result<()> {
        if params.len() != grads.len() {
            return Err(Error::invalid(
                "Optimizer::update_slice",
                format!(
                    "got {} gradients for {} parameters; pass one gradient per parameter",
                    grads.len(),
                    params.len()
                ),
            ));
        }
        let names = index_names(params.len());
        let mut p = Params::from_vec(names.clone(), params.to_vec())?;
        let g = Params::from_vec(names, grads.to_vec())?;
        self.update(&mut p, &g)?;
        for (slot, (_, new)) in params.iter_mut().zip(p) {
            *slot = new;
        }
        Ok(())
    }

    /// Everything the optimiser carries between steps (see the [module docs](self)):
    /// `"step"` and the prefixed moments. Empty before the first update.
    fn state(&self) -> Params;

    /// Restores a state returned by [`Optimizer::state`] (of an optimiser of the same
    /// kind). Errors on names it does not know, a step that is not a non-negative whole
    /// number, or moments that are not float arrays or do not pair up; whether the
    /// moments fit the parameters is checked at the next update. On `Err`, nothing has
    /// changed.
    fn load_state(&mut self, state: Params) -> Result<()>;

    /// The number of updates taken (counting those of a loaded state).
    fn step_count(&self) -> u64;

    /// The learning rate the next update uses.
    fn learning_rate(&self) -> f64;

    /// Sets the learning rate for the next updates (for schedules).
    fn set_learning_rate(&mut self, lr: f64);
}

/// `"0"`, `"1"`, ... zero-padded to the width of the largest index, so that the names
/// sort in index order.
fn index_names(n: usize) -> Vec<String> {
    let width = n.saturating_sub(1).to_string().len();
    (0..n).map(|i| format!("{i:0width$}")).collect()
}

/// Errors unless `value` is finite and at least 0.
fn check_non_negative(op: &'static str, what: &str, value: f64) -> Result<()> {
    if !(value.is_finite() && value >= 0.0) {
        return Err(Error::invalid(op, format!("{what} must be finite and >= 0, got {value}")));
    }
    Ok(())
}

/// Errors unless `value` is in `[0, 1)`.
fn check_unit(op: &'static str, what: &str, value: f64) -> Result<()> {
    if !(0.0..1.0).contains(&value) {
        return Err(Error::invalid(op, format!("{what} must be in [0, 1), got {value}")));
    }
    Ok(())
}

/// Checks that `grads` fits `params`: the same names, float parameters, and for each
/// name the same shape and dtype.
fn check_grads(op: &'static str, params: &Params, grads: &Params) -> Result<()> {
    params.check_same_names(op, "the parameters", grads, "the gradients")?;
    for ((name, p), g) in params.iter().zip(grads.values()) {
        if !p.dtype().is_float() {
            return Err(Error::dtype(
                op,
                p.dtype(),
                format!("parameter {name:?} is not a float array; only float parameters can be optimised"),
            ));
        }
        check_alike(op, g, p, || {
            format!(
                "the gradient of {name:?} is {:?} {}, the parameter {:?} {}; they must match",
                g.shape(),
                g.dtype(),
                p.shape(),
                p.dtype()
            )
        })?;
    }
    Ok(())
}

/// Errors unless `a` has `b`'s shape (an [`Error::Shape`]) and dtype (an
/// [`Error::DType`] naming `a`'s), with the message `msg` makes.
fn check_alike(op: &'static str, a: &Array, b: &Array, msg: impl FnOnce() -> String) -> Result<()> {
    if a.shape() != b.shape() {
        return Err(Error::shape(op, msg()));
    }
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(op, a.dtype(), msg()));
    }
    Ok(())
}

/// Checks that the moments `what` of the state fit `params` one to one, in names,
/// shapes and dtypes.
fn check_moments(op: &'static str, what: &str, moments: &Params, params: &Params) -> Result<()> {
    moments.check_same_names(op, &format!("the optimiser's {what}"), params, "the parameters")?;
    for ((name, m), p) in moments.iter().zip(params.values()) {
        check_alike(op, m, p, || {
            format!(
                "the optimiser's {what} for {name:?} is {:?} {}, the parameter {:?} {}; \
                 load a state saved for these parameters",
                m.shape(),
                m.dtype(),
                p.shape(),
                p.dtype()
            )
        })?;
    }
    Ok(())
}

/// The step count as a state entry: a 0-d `int64` array of host data (no kernel runs to
/// make it, on any device).
fn step_array(step: u64) -> Result<Array> {
    let step =
        i64::try_from(step).map_err(|_| Error::invalid("optim", format!("step count {step} overflows int64")))?;
    Array::scalar(step)
}

/// A state split by prefix: the step count and one collection per known prefix.
struct SplitState {
    step: u64,
    groups: Vec<Params>,
}

/// Splits `state` into its `"step"` entry and the entries `"<prefix>.<name>"` of each
/// of `prefixes` (as `name` in the group of that prefix). Errors on any other name, on
/// a step that is not one non-negative whole number, and on non-float moments.
fn split_state(op: &'static str, state: Params, prefixes: &[&str]) -> Result<SplitState> {
    let mut groups = vec![Params::new(); prefixes.len()];
    let mut step_entry = None;
    for (key, a) in state {
        if key == "step" {
            step_entry = Some(a);
            continue;
        }
        let group = key.split_once('.').and_then(|(prefix, name)| {
            prefixes.iter().position(|p| *p == prefix).filter(|_| !name.is_empty()).map(|i| (i, name.to_string()))
        });
        let Some((i, name)) = group else {
            let known: Vec<String> = prefixes.iter().map(|p| format!("\"{p}.<name>\"")).collect();
            return Err(Error::invalid(
                op,
                format!("the state entry {key:?} is not one this optimiser has (\"step\", {})", known.join(", ")),
            ));
        };
        if !a.dtype().is_float() {
            return Err(Error::dtype(op, a.dtype(), format!("the state entry {key:?} must be a float array")));
        }
        groups[i].insert(name, a);
    }
    let step = match &step_entry {
        Some(a) => read_step(op, a)?,
        None => 0,
    };
    Ok(SplitState { step, groups })
}

/// The value of a `"step"` entry: one element, a non-negative whole number, in any
/// integer or float dtype (a float step, as PyTorch saves it, is accepted). Read on the
/// host, without a kernel, so any device's array works.
fn read_step(op: &'static str, a: &Array) -> Result<u64> {
    if a.size() != 1 {
        return Err(Error::shape(
            op,
            format!("the state's \"step\" must hold one number, its shape is {:?}", a.shape()),
        ));
    }
    let bad =
        |value: String| Error::invalid(op, format!("the state's \"step\" must be a whole number >= 0, got {value}"));
    let int = |v: i64| u64::try_from(v).map_err(|_| bad(v.to_string()));
    // 2^63 and above do not fit the int64 the state reports.
    let float =
        |v: f64| if v >= 0.0 && v.fract() == 0.0 && v < 2f64.powi(63) { Ok(v as u64) } else { Err(bad(v.to_string())) };
    match a.dtype() {
        DType::I64 => int(a.to_vec::<i64>()?[0]),
        DType::I32 => int(a.to_vec::<i32>()?[0].into()),
        DType::U32 => Ok(a.to_vec::<u32>()?[0].into()),
        DType::F64 => float(a.to_vec::<f64>()?[0]),
        DType::F32 => float(a.to_vec::<f32>()?[0].into()),
        DType::F16 => float(a.to_vec::<half::f16>()?[0].to_f64()),
        DType::BF16 => float(a.to_vec::<half::bf16>()?[0].to_f64()),
        DType::Bool => Err(Error::dtype(op, DType::Bool, "the state's \"step\" is a count; store it as int64")),
    }
}

/// Checks that two moment collections loaded together hold the same names, shapes and
/// dtypes (Adam's `m` and `v`).
fn check_paired(op: &'static str, a: (&str, &Params), b: (&str, &Params)) -> Result<()> {
    a.1.check_same_names(
        op,
        &format!("the state's \"{}.*\" entries", a.0),
        b.1,
        &format!("its \"{}.*\" entries", b.0),
    )?;
    for ((name, x), y) in a.1.iter().zip(b.1.values()) {
        check_alike(op, x, y, || {
            format!(
                "the state's \"{}.{name}\" is {:?} {} but \"{}.{name}\" is {:?} {}",
                a.0,
                x.shape(),
                x.dtype(),
                b.0,
                y.shape(),
                y.dtype()
            )
        })?;
    }
    Ok(())
}

/// Replaces each parameter by the new array of the same position (name order).
fn commit(params: &mut Params, new: Vec<Array>) {
    for (slot, a) in params.values_mut().zip(new) {
        *slot = a;
    }
}
