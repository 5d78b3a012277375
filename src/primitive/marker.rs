//! `Marker`: one of its inputs, unchanged, carrying a transform rule of its own. It is
//! how `stop_gradient`, `custom_vjp` and `checkpoint` reach the graph: backends pass
//! the buffer through (as for `Reshape`), and autodiff reads the rule.

use std::sync::Arc;

use super::{FusionClass, Meta, Rules};
use crate::array::Array;
use crate::error::{Error, Result};

/// A user's backward rule: `(primals, outputs, cotangents) -> one cotangent per primal`.
pub type VjpFn = dyn Fn(&[Array], &[Array], &[Array]) -> Result<Vec<Array>> + Send + Sync;

/// A function of arrays, as the transforms take them.
pub type ArrayFn = dyn Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync;

/// The rule of a `custom_vjp` (or `checkpoint`) node: the forward function (for the
/// jvp, which differentiates it) and the backward rule the user gave.
#[derive(Clone)]
pub struct CustomRule {
    /// For errors and logs ("custom_vjp", "checkpoint").
    pub name: &'static str,
    /// The forward function.
    pub forward: Arc<ArrayFn>,
    /// The backward rule.
    pub backward: Arc<VjpFn>,
}

impl std::fmt::Debug for CustomRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CustomRule({})", self.name)
    }
}

impl PartialEq for CustomRule {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.forward, &other.forward) && Arc::ptr_eq(&self.backward, &other.backward)
    }
}

/// What a marker does to derivatives.
#[derive(Debug, Clone, PartialEq)]
pub enum MarkerKind {
    /// No derivative flows through: inputs `[x]`.
    StopGradient,
    /// Inputs `[outputs.., primals..]` of a function with `outputs` outputs; this node is
    /// output `index`. The rule gives the primals' cotangents; none flows into the
    /// forward function's own graph.
    Custom {
        /// The rule.
        rule: CustomRule,
        /// How many outputs the function has (the first inputs).
        outputs: usize,
    },
}

/// Input `index`, unchanged, with the derivative rule of `kind`.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    /// The rule.
    pub kind: MarkerKind,
    /// Which input the node passes through.
    pub index: usize,
}

impl Rules for Marker {
    fn name(&self) -> &'static str {
        match &self.kind {
            MarkerKind::StopGradient => "stop_gradient",
            MarkerKind::Custom { rule, .. } => rule.name,
        }
    }

    fn infer(&self, inputs: &[&Meta]) -> Result<Meta> {
        let valid = match &self.kind {
            MarkerKind::StopGradient => inputs.len() == 1 && self.index == 0,
            MarkerKind::Custom { outputs, .. } => self.index < *outputs && *outputs <= inputs.len(),
        };
        if !valid {
            return Err(Error::invalid(self.name(), format!("marker {self:?} does not fit {} inputs", inputs.len())));
        }
        Ok(inputs[self.index].clone())
    }

    fn fusion_class(&self) -> FusionClass {
        FusionClass::View
    }

    fn vjp(&self, primals: &[Array], _: &Array, cotangent: &Array) -> Result<Vec<Option<Array>>> {
        let MarkerKind::Custom { rule, outputs } = &self.kind else { return Ok(vec![None]) };
        let (outs, args) = primals.split_at(*outputs);
        let cots = outs
            .iter()
            .enumerate()
            .map(|(i, o)| if i == self.index { Ok(cotangent.clone()) } else { o.zeros_like() })
            .collect::<Result<Vec<_>>>()?;
        let grads = (rule.backward)(args, outs, &cots)?;
        if grads.len() != args.len() {
            return Err(Error::invalid(
                rule.name,
                format!("the backward rule gave {} cotangents for {} inputs", grads.len(), args.len()),
            ));
        }
        let mut out = vec![None; *outputs];
        for (i, (g, a)) in grads.into_iter().zip(args).enumerate() {
            if g.shape() != a.shape() || g.dtype() != a.dtype() {
                return Err(Error::shape(
                    rule.name,
                    format!(
                        "the backward rule's cotangent {i} is {:?} {}, its input is {:?} {}",
                        g.shape(),
                        g.dtype(),
                        a.shape(),
                        a.dtype()
                    ),
                ));
            }
            out.push(Some(g));
        }
        Ok(out)
    }

    /// A custom rule's tangent differentiates its forward function.
    fn jvp(&self, primals: &[Array], _: &Array, tangents: &[Option<Array>]) -> Result<Option<Array>> {
        let MarkerKind::Custom { rule, outputs } = &self.kind else { return Ok(None) };
        let (args, ts) = (&primals[*outputs..], &tangents[*outputs..]);
        if ts.iter().all(Option::is_none) {
            return Ok(None);
        }
        let mut tangents = crate::transforms::jvp_where_given(&*rule.forward, args, ts)?;
        Ok(Some(tangents.swap_remove(self.index)))
    }

    /// Every backend can pass an input through: the node is its input.
    fn decompose(&self, inputs: &[Array]) -> Option<Result<Vec<Array>>> {
        inputs.get(self.index).map(|x| Ok(vec![x.clone()]))
    }
}
