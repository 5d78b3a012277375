//! `Fused`: a fused region kept by [`crate::compile()`], one node in place of the
//! primitives it stands for. Eval hands it to the backend's [`crate::fusion::Fuser`]
//! as it would a region the fusion pass found; its rules come from its decomposition
//! (the region's primitives, rebuilt over its inputs).

use std::sync::Arc;

use super::{ArrayFn, FusionClass, Meta, Rules};
use crate::array::Array;
use crate::error::{Error, Result};
use crate::fusion::Program;

/// A region planned when [`crate::compile()`] traced a function, replayed as one node.
#[derive(Clone)]
pub struct Fused {
    /// What the backend's fuser runs; its inputs are the node's.
    pub program: Arc<Program>,
    /// The region's primitives over the node's inputs, giving its one output: what a
    /// backend without a fuser, or whose kernel fails to build, runs instead, and what
    /// the derivative rules differentiate.
    pub parts: Arc<ArrayFn>,
}

impl std::fmt::Debug for Fused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Fused({})", self.program)
    }
}

/// Two regions of the same program compute the same thing: the program is the whole
/// computation (steps, constants, input metas), the parts only rebuild it.
impl PartialEq for Fused {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.program, &other.program) || self.program == other.program
    }
}

impl Fused {
    /// The decomposition's one output.
    fn rebuild(&self, inputs: &[Array]) -> Result<Array> {
        let mut outs = (self.parts)(inputs)?;
        match outs.len() {
            1 => Ok(outs.remove(0)),
            n => Err(Error::Internal(format!("a fused region's parts gave {n} outputs for 1"))),
        }
    }
}

impl Rules for Fused {
    fn name(&self) -> &'static str {
        "fused"
    }

    fn infer(&self, inputs: &[&Meta]) -> Result<Meta> {
        let want = &self.program.inputs;
        if inputs.len() != want.len() || inputs.iter().zip(want).any(|(a, b)| *a != b) {
            return Err(Error::invalid(
                "fused",
                format!(
                    "a region traced for inputs {want:?} was given {inputs:?}; call the compiled function again to trace these"
                ),
            ));
        }
        Ok(self.program.output.clone())
    }

    /// Already a region: the fusion pass takes it as it is.
    fn fusion_class(&self) -> FusionClass {
        FusionClass::Opaque
    }

    /// The vjp of the decomposition, for the float inputs (nothing flows into others).
    fn vjp(&self, primals: &[Array], _: &Array, cotangent: &Array) -> Result<Vec<Option<Array>>> {
        let grads = crate::transforms::vjp_wrt_floats(&*self.parts, primals, std::slice::from_ref(cotangent))?;
        Ok(grads.into_iter().zip(primals).map(|(g, p)| p.dtype().is_float().then_some(g)).collect())
    }

    fn jvp(&self, primals: &[Array], _: &Array, tangents: &[Option<Array>]) -> Result<Option<Array>> {
        if tangents.iter().all(Option::is_none) {
            return Ok(None);
        }
        Ok(crate::transforms::jvp_where_given(&*self.parts, primals, tangents)?.into_iter().next())
    }

    fn decompose(&self, inputs: &[Array]) -> Option<Result<Vec<Array>>> {
        Some(self.rebuild(inputs).map(|a| vec![a]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::fusion::Step;

    /// A region traced for some inputs refuses others with an `Err` naming both.
    #[test]
    fn other_inputs_are_refused() {
        let m = |shape: &[usize]| Meta::new(shape, DType::F32);
        let program = Program {
            shape: vec![4],
            inputs: vec![m(&[4])],
            steps: vec![(Step::Input(0), DType::F32), (Step::Unary(crate::primitive::UnaryOp::Exp, 0), DType::F32)],
            result: 1,
            reduction: None,
            reduce_axes: vec![],
            output: m(&[4]),
            extra_outputs: vec![],
        };
        let f = Fused { program: Arc::new(program), parts: Arc::new(|x: &[Array]| Ok(vec![x[0].exp()?])) };
        assert_eq!(f.infer(&[&m(&[4])]).unwrap(), m(&[4]));
        for bad in [vec![m(&[5])], vec![Meta::new([4], DType::I32)], vec![m(&[4]), m(&[4])], vec![]] {
            let refs: Vec<&Meta> = bad.iter().collect();
            let e = f.infer(&refs);
            assert!(matches!(e, Err(Error::Invalid { .. })), "{bad:?}: {e:?}");
        }
    }
}
