//! The tape: the part of a traced graph that lies between the sources (the traced
//! function's inputs) and its outputs, in topological order, and the two walks over it.

use std::collections::{HashMap, HashSet};

use crate::array::{Array, Node};
use crate::error::{Error, Result};
use crate::primitive::Primitive;
use crate::stream::with_stream;

type Key = *const Node;

/// One node of the tape: a float node with at least one input on a path from a source.
struct Step {
    node: Array,
    op: Primitive,
    inputs: Vec<Array>,
}

/// A node being visited: the node, its graph (if it has one), the next input to visit.
type Frame = (Array, Option<(Primitive, Vec<Array>)>, usize);

/// The nodes that depend on the sources, in topological order.
pub(super) struct Tape {
    steps: Vec<Step>,
    /// Sources and steps: the nodes a derivative can reach.
    active: HashSet<Key>,
}

impl Tape {
    /// Walks back from `outputs` (iteratively: traced chains can be long), stopping at
    /// `sources` and at nodes without a graph (data, or evaluated outside a retaining
    /// scope, which cannot depend on the sources).
    pub(super) fn trace(outputs: &[Array], sources: &[Array]) -> Tape {
        let mut active: HashSet<Key> = sources.iter().map(Array::ptr).collect();
        let mut visited: HashSet<Key> = active.clone();
        let mut steps = Vec::new();
        let mut stack: Vec<Frame> = Vec::new();
        for out in outputs {
            if !visited.insert(out.ptr()) {
                continue;
            }
            stack.push((out.clone(), out.graph(), 0));
            while let Some((node, graph, next)) = stack.last_mut() {
                let Some((_, inputs)) = graph else {
                    stack.pop();
                    continue;
                };
                if let Some(child) = inputs.get(*next) {
                    *next += 1;
                    if visited.insert(child.ptr()) {
                        let child = child.clone();
                        let g = child.graph();
                        stack.push((child, g, 0));
                    }
                    continue;
                }
                // Integer and bool nodes carry no derivative, whatever they read.
                let reached = node.dtype().is_float() && inputs.iter().any(|i| active.contains(&i.ptr()));
                let (node, graph, _) = stack.pop().expect("the loop saw this frame");
                if reached && let Some((op, inputs)) = graph {
                    active.insert(node.ptr());
                    steps.push(Step { node, op, inputs });
                }
            }
        }
        Tape { steps, active }
    }

    /// Reverse mode: the cotangents of `sources` (`None` where no path reaches one) for
    /// `cotangents` of `outputs`. Each rule runs on its node's stream, so the backward
    /// pass runs where the forward one did.
    pub(super) fn backward(
        &self,
        outputs: &[Array],
        cotangents: &[Array],
        sources: &[Array],
    ) -> Result<Vec<Option<Array>>> {
        let mut cot: HashMap<Key, Array> = HashMap::new();
        for (o, c) in outputs.iter().zip(cotangents) {
            if self.active.contains(&o.ptr()) {
                accumulate(&mut cot, o, c.clone())?;
            }
        }
        for step in self.steps.iter().rev() {
            let Some(g) = cot.remove(&step.node.ptr()) else { continue };
            let rules = step.op.rules();
            let grads = with_stream(&step.node.stream(), || rules.vjp(&step.inputs, &step.node, &g))?;
            if grads.len() != step.inputs.len() {
                return Err(Error::Internal(format!(
                    "{}'s vjp gave {} cotangents for {} inputs",
                    rules.name(),
                    grads.len(),
                    step.inputs.len()
                )));
            }
            for (input, g) in step.inputs.iter().zip(grads) {
                if let Some(g) = g
                    && self.active.contains(&input.ptr())
                {
                    check_like(rules.name(), "vjp", &g, input)?;
                    accumulate(&mut cot, input, g)?;
                }
            }
        }
        Ok(sources.iter().map(|s| cot.remove(&s.ptr())).collect())
    }

    /// Forward mode: the tangents of `outputs` (`None` where zero) for `tangents` of
    /// `sources`.
    pub(super) fn forward(
        &self,
        sources: &[Array],
        tangents: &[Array],
        outputs: &[Array],
    ) -> Result<Vec<Option<Array>>> {
        let mut tan: HashMap<Key, Array> = sources.iter().zip(tangents).map(|(s, t)| (s.ptr(), t.clone())).collect();
        for step in &self.steps {
            let ts: Vec<Option<Array>> = step.inputs.iter().map(|i| tan.get(&i.ptr()).cloned()).collect();
            if ts.iter().all(Option::is_none) {
                continue;
            }
            let rules = step.op.rules();
            let t = with_stream(&step.node.stream(), || rules.jvp(&step.inputs, &step.node, &ts))?;
            if let Some(t) = t {
                check_like(rules.name(), "jvp", &t, &step.node)?;
                tan.insert(step.node.ptr(), t);
            }
        }
        Ok(outputs.iter().map(|o| tan.get(&o.ptr()).cloned()).collect())
    }
}

/// Adds `g` into `node`'s entry.
fn accumulate(map: &mut HashMap<Key, Array>, node: &Array, g: Array) -> Result<()> {
    let sum = match map.remove(&node.ptr()) {
        Some(prev) => prev.add(&g)?,
        None => g,
    };
    map.insert(node.ptr(), sum);
    Ok(())
}

/// A rule's result must have the shape and dtype of what it is the derivative of: a
/// mismatch is a bug in the rule, reported rather than propagated.
fn check_like(op: &str, rule: &str, d: &Array, like: &Array) -> Result<()> {
    if d.shape() != like.shape() || d.dtype() != like.dtype() {
        return Err(Error::Internal(format!(
            "{op}'s {rule} gave {:?} {} for {:?} {}",
            d.shape(),
            d.dtype(),
            like.shape(),
            like.dtype()
        )));
    }
    Ok(())
}
