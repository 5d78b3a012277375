//! Views: `Reshape`, `AsStrided` and `Copy` (to this node's device).

use super::{FusionClass, Meta, Rules, arity, derivatives_not_yet};
use crate::array::Array;
use crate::error::{Error, Result};
use crate::shape::numel;

/// One input; the output shares its data with a new shape of the same size.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reshape {
    /// Output shape.
    pub shape: Vec<usize>,
}

impl Rules for Reshape {
    fn name(&self) -> &'static str {
        "reshape"
    }
    fn infer(&self, inputs: &[&Meta]) -> Result<Vec<Meta>> {
        arity("reshape", inputs, 1)?;
        let x = inputs[0];
        if numel(&self.shape) != x.numel() {
            return Err(Error::shape("reshape", format!("cannot reshape {:?} into {:?}", x.shape, self.shape)));
        }
        Ok(vec![Meta::new(self.shape.clone(), x.dtype)])
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::View
    }
    derivatives_not_yet!();
}

/// One input; reads it as a strided view: `out[idx] = in[offset + sum(idx * strides)]`.
/// Strides may be zero (broadcast) or negative (flip); every position read is inside
/// the input (checked by `infer`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AsStrided {
    /// Output shape.
    pub shape: Vec<usize>,
    /// Strides in elements, one per output axis.
    pub strides: Vec<isize>,
    /// Offset in elements.
    pub offset: usize,
}

impl Rules for AsStrided {
    fn name(&self) -> &'static str {
        "as_strided"
    }
    fn infer(&self, inputs: &[&Meta]) -> Result<Vec<Meta>> {
        arity("as_strided", inputs, 1)?;
        let x = inputs[0];
        if self.strides.len() != self.shape.len() {
            return Err(Error::shape(
                "as_strided",
                format!("{} strides for a shape of rank {}", self.strides.len(), self.shape.len()),
            ));
        }
        if numel(&self.shape) > 0 {
            // The lowest and highest element the view reads.
            let (mut lo, mut hi) = (self.offset as isize, self.offset as isize);
            for (&d, &s) in self.shape.iter().zip(&self.strides) {
                let reach = (d as isize - 1) * s;
                if reach < 0 { lo += reach } else { hi += reach }
            }
            if lo < 0 || hi >= x.numel() as isize {
                return Err(Error::shape(
                    "as_strided",
                    format!("view {:?} / {:?} + {} reads outside {:?}", self.shape, self.strides, self.offset, x.shape),
                ));
            }
        }
        Ok(vec![Meta::new(self.shape.clone(), x.dtype)])
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::View
    }
    derivatives_not_yet!();
}

/// One input; the same data, made available on this node's device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceCopy;

impl Rules for DeviceCopy {
    fn name(&self) -> &'static str {
        "copy"
    }
    fn infer(&self, inputs: &[&Meta]) -> Result<Vec<Meta>> {
        arity("copy", inputs, 1)?;
        Ok(vec![inputs[0].clone()])
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::View
    }
    derivatives_not_yet!();
}
