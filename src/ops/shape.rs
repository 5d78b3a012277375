//! Shape ops: views (transpose, slice, broadcast, flip) lower to `AsStrided`, size-keeping
//! reshapes to `Reshape`, joins to `Concatenate`.

use crate::array::Array;
use crate::error::{Error, Result};
use crate::primitive::Primitive;
use crate::shape::{broadcast_shapes, contiguous_strides, numel};

impl Array {
    /// The same data in a new shape of the same size; one axis may be `-1` (inferred).
    pub fn reshape(&self, shape: &[isize]) -> Result<Array> {
        let mut out = Vec::with_capacity(shape.len());
        let mut infer = None;
        for (i, &d) in shape.iter().enumerate() {
            match d {
                -1 if infer.is_none() => {
                    infer = Some(i);
                    out.push(1);
                }
                -1 => return Err(Error::shape("reshape", format!("only one -1 is allowed, got {shape:?}"))),
                d if d < 0 => return Err(Error::shape("reshape", format!("negative size in {shape:?}"))),
                d => out.push(d as usize),
            }
        }
        let known = numel(&out);
        if let Some(i) = infer {
            if known == 0 || self.size() % known != 0 {
                return Err(Error::shape(
                    "reshape",
                    format!("cannot infer -1: {:?} ({} elements) into {shape:?}", self.shape(), self.size()),
                ));
            }
            out[i] = self.size() / known;
        }
        if numel(&out) != self.size() {
            return Err(Error::shape(
                "reshape",
                format!("cannot reshape {:?} ({} elements) into {shape:?}", self.shape(), self.size()),
            ));
        }
        self.reshape_to(out)
    }

    /// Reshape to a shape already known to have the same size.
    pub(crate) fn reshape_to(&self, shape: Vec<usize>) -> Result<Array> {
        if shape == self.shape() {
            return Ok(self.clone());
        }
        Array::from_op(Primitive::Reshape, vec![self.clone()], shape, self.dtype())
    }

    /// A strided view of this array's contiguous data, materialised by the backend.
    pub(crate) fn as_strided(&self, shape: Vec<usize>, strides: Vec<isize>, offset: usize) -> Result<Array> {
        if shape == self.shape() && offset == 0 && strides == contiguous_strides(&shape) {
            return Ok(self.clone());
        }
        Array::from_op(Primitive::AsStrided { strides, offset }, vec![self.clone()], shape, self.dtype())
    }

    /// Broadcasts to `shape` with NumPy's rules.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Array> {
        let out = broadcast_shapes("broadcast_to", self.shape(), shape)?;
        if out != shape {
            return Err(Error::shape("broadcast_to", format!("cannot broadcast {:?} to {shape:?}", self.shape())));
        }
        let strides = crate::shape::broadcast_strides(self.shape(), shape);
        self.as_strided(shape.to_vec(), strides, 0)
    }
}
