//! Indexing and joining: `Concatenate`, `Gather`, `Scatter`.

use super::table::op_table;
use super::{FusionClass, Meta, Rules, arity, derivatives_not_yet};
use crate::array::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};

op_table! {
    /// How `Scatter` combines updates with the destination.
    pub enum ScatterMode: "SCATTER" {
        /// Overwrite; where indices repeat, which update wins is unspecified.
        Assign = 0, "assign", ANY;
        /// Accumulate; repeated indices add up (integers wrap).
        Add = 1, "add", ANY;
    }
}

fn index_dtype(op: &'static str, d: DType) -> Result<()> {
    match d {
        DType::I32 | DType::U32 => Ok(()),
        DType::Bool | DType::I64 | DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {
            Err(Error::dtype(op, d, "indices must be int32 or uint32"))
        }
    }
}

fn check_axis(op: &'static str, axis: usize, ndim: usize) -> Result<()> {
    if axis >= ndim {
        return Err(Error::Axis { op, axis: axis as isize, ndim });
    }
    Ok(())
}

/// Inputs of one dtype and rank, equal except along `axis`; joined along it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Concatenate {
    /// The axis.
    pub axis: usize,
}

impl Rules for Concatenate {
    fn name(&self) -> &'static str {
        "concatenate"
    }
    fn infer(&self, inputs: &[&Meta]) -> Result<Vec<Meta>> {
        let Some(first) = inputs.first() else {
            return Err(Error::invalid("concatenate", "needs at least one input"));
        };
        check_axis("concatenate", self.axis, first.shape.len())?;
        let mut shape = first.shape.clone();
        shape[self.axis] = 0;
        for m in inputs {
            if m.dtype != first.dtype {
                return Err(Error::dtype("concatenate", m.dtype, format!("inputs must all be {}", first.dtype)));
            }
            let same = m.shape.len() == shape.len()
                && (0..shape.len()).all(|i| i == self.axis || m.shape[i] == first.shape[i]);
            if !same {
                return Err(Error::shape(
                    "concatenate",
                    format!("shapes {:?} and {:?} differ outside axis {}", first.shape, m.shape, self.axis),
                ));
            }
            shape[self.axis] += m.shape[self.axis];
        }
        Ok(vec![Meta::new(shape, first.dtype)])
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::Opaque
    }
    derivatives_not_yet!();
}

/// Inputs `(src, indices)`, same rank, `indices` (`I32` or `U32`) equal to `src`'s
/// shape except along `axis`: `out[i] = src[i with i[axis] = indices[i]]`. Output shape =
/// indices' shape. Indices clamp into range; a non-empty gather from an empty axis has
/// nothing to clamp to and is refused here, on every device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Gather {
    /// The axis.
    pub axis: usize,
}

impl Rules for Gather {
    fn name(&self) -> &'static str {
        "gather"
    }
    fn infer(&self, inputs: &[&Meta]) -> Result<Vec<Meta>> {
        arity("gather", inputs, 2)?;
        let (src, idx) = (inputs[0], inputs[1]);
        index_dtype("gather", idx.dtype)?;
        check_axis("gather", self.axis, src.shape.len())?;
        let fits = idx.shape.len() == src.shape.len()
            && (0..src.shape.len()).all(|d| d == self.axis || idx.shape[d] == src.shape[d]);
        if !fits {
            return Err(Error::shape(
                "gather",
                format!("indices {:?} must match {:?} except along axis {}", idx.shape, src.shape, self.axis),
            ));
        }
        if src.shape[self.axis] == 0 && idx.numel() > 0 {
            return Err(Error::shape(
                "gather",
                format!("cannot take from empty axis {} of shape {:?}", self.axis, src.shape),
            ));
        }
        Ok(vec![Meta::new(idx.shape.clone(), src.dtype)])
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::Opaque
    }
    derivatives_not_yet!();
}

/// Inputs `(dst, indices, updates)`; `indices` and `updates` have one shape, equal to
/// `dst`'s except along `axis`: `out = dst; out[i with i[axis] = indices[i]] (op)= updates[i]`.
/// Out-of-range updates are dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Scatter {
    /// The axis.
    pub axis: usize,
    /// Assign or add.
    pub mode: ScatterMode,
}

impl Rules for Scatter {
    fn name(&self) -> &'static str {
        match self.mode {
            ScatterMode::Assign => "scatter",
            ScatterMode::Add => "scatter_add",
        }
    }
    fn infer(&self, inputs: &[&Meta]) -> Result<Vec<Meta>> {
        let op = self.name();
        arity(op, inputs, 3)?;
        let (dst, idx, upd) = (inputs[0], inputs[1], inputs[2]);
        index_dtype(op, idx.dtype)?;
        check_axis(op, self.axis, dst.shape.len())?;
        if upd.dtype != dst.dtype {
            return Err(Error::dtype(op, upd.dtype, format!("updates must be {} like the destination", dst.dtype)));
        }
        let fits = idx.shape.len() == dst.shape.len()
            && (0..dst.shape.len()).all(|d| d == self.axis || idx.shape[d] == dst.shape[d]);
        if !fits || upd.shape != idx.shape {
            return Err(Error::shape(
                op,
                format!(
                    "indices {:?} and updates {:?} must have one shape, equal to {:?} except along axis {}",
                    idx.shape, upd.shape, dst.shape, self.axis
                ),
            ));
        }
        Ok(vec![dst.clone()])
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::Opaque
    }
    derivatives_not_yet!();
}
