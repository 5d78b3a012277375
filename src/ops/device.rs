//! Moving arrays between devices and streams (lowered to `Copy`).

use crate::array::Array;
use crate::error::Result;
use crate::primitive::DeviceCopy;
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
        with_stream(stream, || Array::from_op(DeviceCopy, [self.clone()]))
    }
}

#[cfg(test)]
mod tests {
    use crate::stream::{DeviceKind, new_stream};
    use crate::{Array, Device};

    #[test]
    fn copies_to_devices_and_streams() {
        let a = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
        let b = a.to_device(Device::cpu()).unwrap();
        assert_eq!(b.device(), Device::cpu());
        assert_eq!(b.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
        let s = new_stream(Device::cpu()).unwrap();
        let c = a.to_stream(&s).unwrap();
        assert_eq!(c.stream(), s);
        assert_eq!(c.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
        // Work built inside a scope on `s` stays on `s`.
        let d = crate::with_stream(&s, || a.to_device(Device::cpu())).unwrap();
        assert_eq!(d.stream(), s);
        // A device with no backend is an error, not a panic.
        assert!(a.to_device(Device { kind: DeviceKind::Custom(999), index: 0 }).is_err());
        crate::close_stream(&s).unwrap();
        assert!(a.to_stream(&s).is_err());
    }
}
