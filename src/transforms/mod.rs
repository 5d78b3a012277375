//! Function transforms: [`vjp`], [`jvp`], [`grad`], [`value_and_grad`] (and their
//! [`Params`] forms), [`stop_gradient`], [`custom_vjp`], [`checkpoint`].
//!
//! A transform calls the function once on stand-ins for its inputs, inside a retaining
//! scope, and walks the graph that call built (the tape), applying each primitive's
//! `vjp` or `jvp` rule (`src/primitive/`). Rules are built from ops, so the results are
//! ordinary lazy arrays: nothing is evaluated until you ask, they run on the streams the
//! forward pass ran on, and transforms compose (`grad` of `grad`, `jvp` of `vjp`).
//!
//! ```
//! use lazuli::Array;
//! // d/dx sum(x^3) = 3x^2, and its derivative again: 6x.
//! let f = |x: &[Array]| x[0].mul(&x[0])?.mul(&x[0])?.sum(&[], false);
//! let df = lazuli::grad(f, &[0]);
//! let d2f = lazuli::grad(move |x: &[Array]| df(x)?.remove(0).sum(&[], false), &[0]);
//! let x = Array::from_slice(&[1.0f32, 2.0], &[2])?;
//! assert_eq!(d2f(&[x])?[0].to_vec::<f32>()?, vec![6.0, 12.0]);
//! # Ok::<(), lazuli::Error>(())
//! ```
//!
//! Derivatives exist for float arrays only: differentiating with respect to an integer
//! or bool input is an error, and nothing flows through integer or bool values (a
//! comparison, `argmax`, a cast to `int32`) inside the function.

mod custom;
mod tape;

pub use custom::{checkpoint, custom_vjp, stop_gradient};
pub(crate) use custom::{jvp_where_given, vjp_wrt_floats};

use crate::array::{Array, is_retaining, not_retaining, retaining};
use crate::error::{Error, Result};
use crate::params::Params;
use crate::primitive::{DeviceCopy, or_zeros};
use crate::stream::with_stream;
use tape::Tape;

/// Stand-ins for the inputs: identity nodes (a `Copy` to the input's own device, which
/// passes the buffer through), so that the tape can tell the function's use of an input
/// from any other path to the same array (MLX copies its primals for the same reason).
/// Not a reshape: view ops look through pending reshapes and would skip the stand-in.
fn stand_ins(op: &'static str, primals: &[Array]) -> Result<Vec<Array>> {
    primals
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if !p.dtype().is_float() {
                return Err(Error::dtype(
                    op,
                    p.dtype(),
                    format!("cannot differentiate with respect to input {i}: only float arrays have derivatives (convert it with astype)"),
                ));
            }
            with_stream(&p.stream(), || Array::from_op(DeviceCopy, [p.clone()]))
        })
        .collect()
}

/// A traced output as the caller gets it. At top level, behind a node built outside the
/// retaining scope: once evaluated it lets go of the traced graph, so a loss kept for
/// logging does not keep a step's activations alive. Inside another transform, the
/// output itself, which that transform's tape must be able to walk.
fn handed_out(y: &Array) -> Result<Array> {
    if is_retaining() {
        return Ok(y.clone());
    }
    not_retaining(|| with_stream(&y.stream(), || Array::from_op(DeviceCopy, [y.clone()])))
}

/// Checks that `given` (cotangents or tangents) match `like` one to one in shape and dtype.
fn check_matching(op: &'static str, what: &str, of: &str, given: &[Array], like: &[Array]) -> Result<()> {
    if given.len() != like.len() {
        return Err(Error::invalid(op, format!("got {} {what} for {} {of}", given.len(), like.len())));
    }
    for (i, (g, l)) in given.iter().zip(like).enumerate() {
        if g.shape() != l.shape() {
            return Err(Error::shape(
                op,
                format!("{what} {i} has shape {:?}, but {of} {i} has shape {:?}", g.shape(), l.shape()),
            ));
        }
        if g.dtype() != l.dtype() {
            return Err(Error::dtype(op, g.dtype(), format!("{what} {i} must be {} like {of} {i}", l.dtype())));
        }
    }
    Ok(())
}

/// Vector-Jacobian product: `f(primals)` and, for `cotangents` (one per output, of its
/// shape and dtype), `cotangents · J` with respect to each primal (one per primal, of
/// its shape and dtype; zeros where an output does not depend on it).
///
/// ```
/// use lazuli::Array;
/// let x = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3])?;
/// let ct = Array::from_slice(&[1.0f32, 1.0, 1.0], &[3])?;
/// let (out, vjps) = lazuli::vjp(|x| Ok(vec![x[0].square()?]), &[x], &[ct])?;
/// assert_eq!(out[0].to_vec::<f32>()?, vec![1.0, 4.0, 9.0]);
/// assert_eq!(vjps[0].to_vec::<f32>()?, vec![2.0, 4.0, 6.0]);
/// # Ok::<(), lazuli::Error>(())
/// ```
pub fn vjp<F>(f: F, primals: &[Array], cotangents: &[Array]) -> Result<(Vec<Array>, Vec<Array>)>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    pull_back("vjp", f, primals, |outputs| {
        check_matching("vjp", "cotangents", "outputs", cotangents, outputs)?;
        Ok(cotangents.to_vec())
    })
}

/// Reverse mode: traces `f` at stand-ins for `primals`, asks `seed` for the cotangents
/// of the outputs it built, and pulls them back to the primals.
fn pull_back<F>(
    op: &'static str,
    f: F,
    primals: &[Array],
    seed: impl FnOnce(&[Array]) -> Result<Vec<Array>>,
) -> Result<(Vec<Array>, Vec<Array>)>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    let inputs = stand_ins(op, primals)?;
    let outputs = retaining(|| f(&inputs))?;
    let cotangents = seed(&outputs)?;
    let grads = Tape::trace(&outputs, &inputs).backward(&outputs, &cotangents, &inputs)?;
    let grads = grads.into_iter().zip(primals).map(|(g, p)| or_zeros(g, p)).collect::<Result<_>>()?;
    Ok((outputs.iter().map(handed_out).collect::<Result<_>>()?, grads))
}

/// Jacobian-vector product: `f(primals)` and, for `tangents` (one per primal, of its
/// shape and dtype), `J · tangents` for each output.
///
/// ```
/// use lazuli::Array;
/// let x = Array::from_slice(&[0.0f64, 1.0], &[2])?;
/// let t = Array::from_slice(&[1.0f64, 2.0], &[2])?;
/// let (_, jvps) = lazuli::jvp(|x| Ok(vec![x[0].exp()?]), &[x], &[t])?;
/// let d = jvps[0].to_vec::<f64>()?;
/// assert!((d[0] - 1.0).abs() < 1e-12 && (d[1] - 2.0 * 1f64.exp()).abs() < 1e-12);
/// # Ok::<(), lazuli::Error>(())
/// ```
pub fn jvp<F>(f: F, primals: &[Array], tangents: &[Array]) -> Result<(Vec<Array>, Vec<Array>)>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    let inputs = stand_ins("jvp", primals)?;
    check_matching("jvp", "tangents", "inputs", tangents, primals)?;
    let outputs = retaining(|| f(&inputs))?;
    let tans = Tape::trace(&outputs, &inputs).forward(&inputs, tangents, &outputs)?;
    let tans = tans.into_iter().zip(&outputs).map(|(t, o)| or_zeros(t, o)).collect::<Result<_>>()?;
    Ok((outputs.iter().map(handed_out).collect::<Result<_>>()?, tans))
}

/// Checks `argnums` against `n` inputs: in range, distinct, not empty.
fn check_argnums(op: &'static str, argnums: &[usize], n: usize) -> Result<()> {
    if argnums.is_empty() {
        return Err(Error::invalid(op, "argnums is empty: name at least one input to differentiate"));
    }
    for (i, &a) in argnums.iter().enumerate() {
        if a >= n {
            return Err(Error::invalid(op, format!("argnums has {a}, but the function got {n} inputs")));
        }
        if argnums[..i].contains(&a) {
            return Err(Error::invalid(op, format!("argnums names input {a} twice")));
        }
    }
    Ok(())
}

/// The value and gradient of scalar-valued `f` at `args` with respect to `argnums`.
fn value_and_grad_at<F>(op: &'static str, f: &F, argnums: &[usize], args: &[Array]) -> Result<(Array, Vec<Array>)>
where
    F: Fn(&[Array]) -> Result<Array>,
{
    check_argnums(op, argnums, args.len())?;
    let wrt: Vec<Array> = argnums.iter().map(|&i| args[i].clone()).collect();
    let call = |x: &[Array]| {
        let y = f(&custom::substitute(args, argnums, x))?;
        if y.size() != 1 {
            return Err(Error::shape(
                op,
                format!(
                    "the function must return a scalar (one element), got shape {:?}; reduce it (sum, mean) or use vjp",
                    y.shape()
                ),
            ));
        }
        if !y.dtype().is_float() {
            return Err(Error::dtype(op, y.dtype(), "the function must return a float scalar"));
        }
        Ok(vec![y])
    };
    let ones = |outputs: &[Array]| {
        let y = &outputs[0];
        Ok(vec![with_stream(&y.stream(), || crate::full(y.shape(), 1.0, y.dtype()))?])
    };
    let (mut value, grads) = pull_back(op, call, &wrt, ones)?;
    Ok((value.remove(0), grads))
}

/// The gradient of scalar-valued `f` with respect to the inputs `argnums` names: a
/// function returning one gradient per entry of `argnums`, in that order.
///
/// Errors (when the returned function is called): `argnums` empty, repeated or out of
/// range; an integer or bool input named; `f` returning more than one element.
pub fn grad<F>(f: F, argnums: &[usize]) -> impl Fn(&[Array]) -> Result<Vec<Array>>
where
    F: Fn(&[Array]) -> Result<Array>,
{
    let argnums = argnums.to_vec();
    move |args: &[Array]| Ok(value_and_grad_at("grad", &f, &argnums, args)?.1)
}

/// Like [`grad`], returning `f`'s value too (computed once, by the same trace).
pub fn value_and_grad<F>(f: F, argnums: &[usize]) -> impl Fn(&[Array]) -> Result<(Array, Vec<Array>)>
where
    F: Fn(&[Array]) -> Result<Array>,
{
    let argnums = argnums.to_vec();
    move |args: &[Array]| value_and_grad_at("value_and_grad", &f, &argnums, args)
}

/// [`value_and_grad`] over named parameters: for scalar-valued `f`, its value and one
/// gradient per parameter, under the parameter's name.
///
/// ```
/// use lazuli::{Array, Params};
/// let mut p = Params::new();
/// p.insert("w", Array::from_slice(&[3.0f32], &[1])?);
/// let loss = |p: &Params| p["w"].square()?.sum(&[], false);
/// let (value, grads) = lazuli::value_and_grad_params(loss)(&p)?;
/// assert_eq!(value.item::<f32>()?, 9.0);
/// assert_eq!(grads["w"].to_vec::<f32>()?, vec![6.0]);
/// # Ok::<(), lazuli::Error>(())
/// ```
pub fn value_and_grad_params<F>(f: F) -> impl Fn(&Params) -> Result<(Array, Params)>
where
    F: Fn(&Params) -> Result<Array>,
{
    move |params: &Params| {
        let (names, arrays) = params.to_vec();
        let call = |x: &[Array]| f(&Params::from_vec(names.clone(), x.to_vec())?);
        let argnums: Vec<usize> = (0..arrays.len()).collect();
        if argnums.is_empty() {
            return Err(Error::invalid("value_and_grad_params", "there are no parameters to differentiate"));
        }
        let (value, grads) = value_and_grad_at("value_and_grad_params", &call, &argnums, &arrays)?;
        Ok((value, Params::from_vec(names.clone(), grads)?))
    }
}

/// [`grad`] over named parameters (see [`value_and_grad_params`]).
pub fn grad_params<F>(f: F) -> impl Fn(&Params) -> Result<Params>
where
    F: Fn(&Params) -> Result<Array>,
{
    let vg = value_and_grad_params(f);
    move |params: &Params| Ok(vg(params)?.1)
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex, Weak};

    use crate::array::{Array, Node};

    /// A loss kept after a step (for logging) must not keep the step's activations
    /// alive once the loss and the gradients are evaluated.
    #[test]
    fn a_kept_value_lets_go_of_the_traced_graph() {
        let hidden: Arc<Mutex<Option<Weak<Node>>>> = Arc::default();
        let h = hidden.clone();
        let f = move |x: &[Array]| {
            let act = x[0].exp()?;
            *h.lock().unwrap() = Some(Arc::downgrade(&act.0));
            act.sum(&[], false)
        };
        let x = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
        let (loss, grads) = super::value_and_grad(f, &[0])(&[x]).unwrap();
        crate::eval(&[&loss, &grads[0]]).unwrap();
        drop(grads);
        let weak = hidden.lock().unwrap().take().unwrap();
        assert!(weak.upgrade().is_none(), "the activation is freed while the loss is kept");
        assert!((loss.item::<f32>().unwrap() - (1f32.exp() + 2f32.exp())).abs() < 1e-5);
    }
}
