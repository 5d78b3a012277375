//! Transforms that put a rule of their own in the graph: [`stop_gradient`],
//! [`custom_vjp`], [`checkpoint`] (all through the `Marker` primitive).

use std::sync::Arc;

use crate::array::{Array, not_retaining};
use crate::error::Result;
use crate::primitive::{ArrayFn, CustomRule, Marker, MarkerKind};
use crate::stream::with_stream;

/// `x` itself, through which no derivative flows: `grad` treats it as a constant.
///
/// ```
/// use lazuli::Array;
/// // d/dx (x * stop_gradient(x)) = stop_gradient(x) = x, not 2x.
/// let g = lazuli::grad(|x| x[0].mul(&lazuli::stop_gradient(&x[0])?)?.sum(&[], false), &[0]);
/// let x = Array::from_slice(&[3.0f32], &[1])?;
/// assert_eq!(g(&[x])?[0].to_vec::<f32>()?, vec![3.0]);
/// # Ok::<(), lazuli::Error>(())
/// ```
pub fn stop_gradient(x: &Array) -> Result<Array> {
    Array::from_op(Marker { kind: MarkerKind::StopGradient, index: 0 }, [x.clone()])
}

/// Output `i` of a function as a node carrying `rule`: inputs `[outputs.., args..]`,
/// on the output's stream.
fn mark(rule: &CustomRule, args: &[Array], outputs: Vec<Array>) -> Result<Vec<Array>> {
    let n = outputs.len();
    let inputs: Vec<Array> = outputs.iter().chain(args).cloned().collect();
    outputs
        .iter()
        .enumerate()
        .map(|(index, o)| {
            let kind = MarkerKind::Custom { rule: rule.clone(), outputs: n };
            with_stream(&o.stream(), || Array::from_op(Marker { kind, index }, inputs.clone()))
        })
        .collect()
}

/// `f` with a backward rule of your own: the returned function computes `f`, and
/// reverse-mode transforms call `backward(inputs, outputs, cotangents)` for the inputs'
/// cotangents (one per input, of its shape and dtype) instead of differentiating `f`.
/// Forward mode (`jvp`) still differentiates `f`. With several outputs, `backward` is
/// called once per output that gets a cotangent, the others' cotangents being zeros.
///
/// ```
/// use lazuli::Array;
/// // exp, whose gradient is clipped to at most 1.
/// let clipped = lazuli::custom_vjp(
///     |x| Ok(vec![x[0].exp()?]),
///     |_x, _y, ct| Ok(vec![ct[0].clip(None, Some(1.0))?]),
/// );
/// let g = lazuli::grad(move |x| clipped(x)?.remove(0).sum(&[], false), &[0]);
/// let x = Array::from_slice(&[0.0f32, 5.0], &[2])?;
/// assert_eq!(g(&[x])?[0].to_vec::<f32>()?, vec![1.0, 1.0]);
/// # Ok::<(), lazuli::Error>(())
/// ```
pub fn custom_vjp<F, B>(f: F, backward: B) -> impl Fn(&[Array]) -> Result<Vec<Array>>
where
    F: Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync + 'static,
    B: Fn(&[Array], &[Array], &[Array]) -> Result<Vec<Array>> + Send + Sync + 'static,
{
    let rule = CustomRule { name: "custom_vjp", forward: Arc::new(f), backward: Arc::new(backward) };
    move |args: &[Array]| mark(&rule, args, (rule.forward)(args)?)
}

/// `f`, recomputed in the backward pass instead of kept: the forward pass builds `f`
/// without retaining its intermediate nodes (they are freed once evaluated, as outside
/// any transform), and the backward pass runs `vjp` of `f` again from the inputs. Trades
/// compute for memory in deep models.
pub fn checkpoint<F>(f: F) -> impl Fn(&[Array]) -> Result<Vec<Array>>
where
    F: Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync + 'static,
{
    let forward: Arc<ArrayFn> = Arc::new(f);
    let again = forward.clone();
    let backward = move |args: &[Array], _: &[Array], cts: &[Array]| vjp_wrt_floats(&*again, args, cts);
    let rule = CustomRule { name: "checkpoint", forward, backward: Arc::new(backward) };
    move |args: &[Array]| {
        let outputs = not_retaining(|| (rule.forward)(args))?;
        mark(&rule, args, outputs)
    }
}

/// `vjp` of `f` with respect to its float inputs; other inputs get zeros of their own
/// dtype (they have no derivative).
pub(crate) fn vjp_wrt_floats(f: &ArrayFn, args: &[Array], cts: &[Array]) -> Result<Vec<Array>> {
    let floats: Vec<usize> = (0..args.len()).filter(|&i| args[i].dtype().is_float()).collect();
    let primals: Vec<Array> = floats.iter().map(|&i| args[i].clone()).collect();
    let call = |x: &[Array]| f(&substitute(args, &floats, x));
    let (_, grads) = super::vjp(call, &primals, cts)?;
    let mut grads = grads.into_iter();
    args.iter()
        .enumerate()
        .map(|(i, a)| match floats.contains(&i) {
            true => Ok(grads.next().expect("one gradient per float input")),
            false => a.zeros_like(),
        })
        .collect()
}

/// `jvp` of `f` for the inputs that have a tangent; the others are held constant.
pub(crate) fn jvp_where_given(f: &ArrayFn, args: &[Array], tangents: &[Option<Array>]) -> Result<Vec<Array>> {
    let given: Vec<usize> = (0..args.len()).filter(|&i| tangents[i].is_some()).collect();
    let primals: Vec<Array> = given.iter().map(|&i| args[i].clone()).collect();
    let ts: Vec<Array> = given.iter().filter_map(|&i| tangents[i].clone()).collect();
    let call = |x: &[Array]| f(&substitute(args, &given, x));
    Ok(super::jvp(call, &primals, &ts)?.1)
}

/// `args` with the entries at `at` replaced by `with`, in order.
pub(super) fn substitute(args: &[Array], at: &[usize], with: &[Array]) -> Vec<Array> {
    let mut full = args.to_vec();
    for (&i, a) in at.iter().zip(with) {
        full[i] = a.clone();
    }
    full
}
