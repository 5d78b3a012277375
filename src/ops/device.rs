//! Moving arrays between devices and streams (lowered to `Copy`).

use crate::array::Array;
use crate::error::Result;
use crate::primitive::Primitive;
use crate::stream::{Device, Stream, current_stream, default_stream, with_stream};

impl Array {
    /// The same values, computed on `device`: a copy node on the current stream when
    /// that stream is on `device`, else on `device`'s default stream.
    pub fn to_device(&self, device: Device) -> Result<Array> {
        let cur = current_stream()?;
        let stream = if cur.device == device { cur } else { default_stream(device)? };
        self.to_stream(&stream)
    }

    /// The same values, made available on `stream` (and its device) by a copy node that
    /// runs there; work built on the result can stay on that stream.
    pub fn to_stream(&self, stream: &Stream) -> Result<Array> {
        let (shape, dtype) = (self.shape().to_vec(), self.dtype());
        with_stream(stream, || Array::from_op(Primitive::Copy, vec![self.clone()], shape, dtype))
    }
}
