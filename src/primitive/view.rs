//! Views: `Reshape`, `AsStrided` and `Copy` (to this node's device).

use super::{FusionClass, Meta, Rules, Scatter, ScatterMode, arity};
use crate::array::Array;
use crate::error::{Error, Result};
use crate::shape::{StridedIter, numel};

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
    fn infer(&self, inputs: &[&Meta]) -> Result<Meta> {
        arity("reshape", inputs, 1)?;
        let x = inputs[0];
        if numel(&self.shape) != x.numel() {
            return Err(Error::shape("reshape", format!("cannot reshape {:?} into {:?}", x.shape, self.shape)));
        }
        Ok(Meta::new(self.shape.clone(), x.dtype))
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::View
    }
    fn vjp(&self, primals: &[Array], _: &Array, cotangent: &Array) -> Result<Vec<Option<Array>>> {
        Ok(vec![Some(cotangent.reshape_to(primals[0].shape().to_vec())?)])
    }
    fn jvp(&self, _: &[Array], _: &Array, tangents: &[Option<Array>]) -> Result<Option<Array>> {
        tangents[0].as_ref().map(|t| t.reshape_to(self.shape.clone())).transpose()
    }
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
    fn infer(&self, inputs: &[&Meta]) -> Result<Meta> {
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
        Ok(Meta::new(self.shape.clone(), x.dtype))
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::View
    }
    /// The transpose of a strided read: each cotangent element goes back to the input
    /// element it was read from, adding where a position was read more than once.
    fn vjp(&self, primals: &[Array], _: &Array, cotangent: &Array) -> Result<Vec<Option<Array>>> {
        let x = &primals[0];
        if !x.dtype().is_float() {
            return Ok(vec![None]);
        }
        Ok(vec![Some(self.transpose_into(cotangent, x.shape())?)])
    }
    fn jvp(&self, _: &[Array], _: &Array, tangents: &[Option<Array>]) -> Result<Option<Array>> {
        tangents[0].as_ref().map(|t| Array::from_op(self.clone(), [t.clone()])).transpose()
    }
}

impl AsStrided {
    /// `g` (of the view's shape) added back into an array of `shape` at the positions
    /// the view read.
    fn transpose_into(&self, g: &Array, shape: &[usize]) -> Result<Array> {
        if numel(&self.shape) == 0 {
            return crate::full(shape, 0.0, g.dtype());
        }
        // A broadcast axis (stride 0) read one element many times: sum it first, so the
        // scatter below is no larger than the input.
        let bcast: Vec<isize> =
            (0..self.shape.len()).filter(|&d| self.strides[d] == 0 && self.shape[d] > 1).map(|d| d as isize).collect();
        let g = if bcast.is_empty() { g.clone() } else { g.sum(&bcast, true)? };
        let view: Vec<usize> = g.shape().to_vec();
        // A permutation of the whole input (a transpose, or the identity) is a transpose back.
        if let Some(order) = self.permutation_of(&view, numel(shape)) {
            let axes: Vec<isize> = order.iter().map(|&d| d as isize).collect();
            return g.transpose(&axes)?.reshape_to(shape.to_vec());
        }
        let n = numel(shape);
        if n > i32::MAX as usize {
            return Err(Error::unsupported(
                "transforms",
                format!("the gradient of a strided view of {n} elements needs 64-bit indices"),
            ));
        }
        let strides: Vec<isize> = self.strides.iter().zip(&view).map(|(&s, &d)| if d == 1 { 0 } else { s }).collect();
        let idx: Vec<i32> = StridedIter::new(&view, &strides, self.offset as isize).map(|i| i as i32).collect();
        let idx = Array::from_slice(&idx, &[idx.len()])?;
        let zeros = crate::full(&[n], 0.0, g.dtype())?;
        let flat = g.reshape_to(vec![g.size()])?;
        Array::from_op(Scatter { axis: 0, mode: ScatterMode::Add }, [zeros, idx, flat])?.reshape_to(shape.to_vec())
    }

    /// The axes of `view` (this view's shape after summing broadcast axes) in decreasing
    /// stride order, when the view reads each of `n` input elements exactly once in some
    /// axis order: offset 0, positive strides forming a row-major chain.
    fn permutation_of(&self, view: &[usize], n: usize) -> Option<Vec<usize>> {
        if self.offset != 0 || numel(view) != n {
            return None;
        }
        let mut order: Vec<usize> = (0..view.len()).collect();
        order.sort_by_key(|&d| (std::cmp::Reverse(if view[d] == 1 { isize::MAX } else { self.strides[d] }), d));
        let mut expect = 1isize;
        for &d in order.iter().rev() {
            if view[d] == 1 {
                continue;
            }
            if self.strides[d] != expect {
                return None;
            }
            expect *= view[d] as isize;
        }
        Some(order)
    }
}

/// One input; the same data, made available on this node's device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceCopy;

impl Rules for DeviceCopy {
    fn name(&self) -> &'static str {
        "copy"
    }
    fn infer(&self, inputs: &[&Meta]) -> Result<Meta> {
        arity("copy", inputs, 1)?;
        Ok(inputs[0].clone())
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::View
    }
    fn vjp(&self, _: &[Array], _: &Array, cotangent: &Array) -> Result<Vec<Option<Array>>> {
        Ok(vec![Some(cotangent.clone())])
    }
    fn jvp(&self, _: &[Array], _: &Array, tangents: &[Option<Array>]) -> Result<Option<Array>> {
        Ok(tangents[0].clone())
    }
}
