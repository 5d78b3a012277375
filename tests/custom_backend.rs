//! A third-party backend plugs into the device layer without touching the crate.

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use lazuli::backend::{Backend, Buffer, DeviceBuffer, Input, register_backend};
use lazuli::primitive::{BinaryOp, Meta, Primitive};
use lazuli::{Array, DType, Device, Error, Result, Stream};

/// A toy backend: f32 only, knows `Full` and `Binary(Add)`, counts its kernel runs.
struct Toy {
    runs: AtomicUsize,
}

struct ToyBuf {
    dev: Device,
    data: Vec<f32>,
}

impl DeviceBuffer for ToyBuf {
    fn device(&self) -> Device {
        self.dev
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn toy(b: &Buffer) -> &[f32] {
    &b.as_any().downcast_ref::<ToyBuf>().unwrap().data
}

fn unsupported(msg: &str) -> Error {
    Error::Unsupported { backend: "toy".into(), msg: msg.into() }
}

impl Backend for Toy {
    fn name(&self) -> &str {
        "toy"
    }
    fn allocate(&self, s: &Stream, dtype: DType, len: usize) -> Result<Buffer> {
        if dtype != DType::F32 {
            return Err(unsupported("f32 only"));
        }
        Ok(Arc::new(ToyBuf { dev: s.device, data: vec![0.0; len] }))
    }
    fn upload(&self, s: &Stream, dtype: DType, bytes: &[u8]) -> Result<Buffer> {
        if dtype != DType::F32 {
            return Err(unsupported("f32 only"));
        }
        let data = bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        Ok(Arc::new(ToyBuf { dev: s.device, data }))
    }
    fn download(&self, b: &Buffer, _dtype: DType, _len: usize) -> Result<Vec<u8>> {
        Ok(toy(b).iter().flat_map(|x| x.to_le_bytes()).collect())
    }
    fn run(&self, s: &Stream, op: &Primitive, inputs: &[Input<'_>], out: &Meta) -> Result<Buffer> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let n: usize = out.shape.iter().product();
        let data = match op {
            Primitive::Full { value } => vec![*value as f32; n],
            Primitive::Binary(BinaryOp::Add) if inputs[0].meta.shape == inputs[1].meta.shape => {
                toy(inputs[0].buffer).iter().zip(toy(inputs[1].buffer)).map(|(a, b)| a + b).collect()
            }
            other => return Err(unsupported(&format!("no kernel for {other:?}"))),
        };
        Ok(Arc::new(ToyBuf { dev: s.device, data }))
    }
    fn synchronize(&self, _s: &Stream) -> Result<()> {
        Ok(())
    }
}

#[test]
fn a_registered_backend_runs_ops_and_reports_what_it_lacks() {
    let backend = Arc::new(Toy { runs: AtomicUsize::new(0) });
    let dev = register_backend(backend.clone()).unwrap();
    let s = lazuli::new_stream(dev).unwrap();

    // Data made on the CPU is copied to the toy device when an op there needs it.
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    let b = lazuli::with_stream(&s, || a.add(&a)).unwrap();
    assert_eq!(b.device(), dev);
    assert_eq!(b.to_vec::<f32>().unwrap(), vec![2.0, 4.0, 6.0]);
    assert_eq!(backend.runs.load(Ordering::SeqCst), 1);

    // Back on the CPU, its result is an ordinary input.
    let c = b.mul(10.0).unwrap();
    assert_eq!(c.device(), Device::cpu());
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![20.0, 40.0, 60.0]);

    // An op the backend lacks is an error naming the backend, not a panic.
    let d = lazuli::with_stream(&s, || a.exp()).unwrap();
    match d.eval() {
        Err(Error::Unsupported { backend, .. }) => assert_eq!(backend, "toy"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
}
