//! The CPU backend: host memory, every primitive, threads (rayon) on large arrays.

mod copy;
mod elementwise;
mod matmul;
pub mod random;
mod reduce;
mod storage;

use std::any::Any;
use std::sync::{Arc, OnceLock};

pub use storage::{CpuData, CpuElem};

use crate::backend::{Backend, Buffer, DeviceBuffer, Input};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::primitive::{Meta, Primitive};
use crate::stream::{Device, Stream};

/// Arrays with at least this many elements are split across threads.
pub(crate) const PAR_MIN: usize = 1 << 15;

/// A CPU buffer: typed host data.
#[derive(Debug)]
pub struct CpuBuffer {
    /// The data.
    pub data: CpuData,
}

impl DeviceBuffer for CpuBuffer {
    fn device(&self) -> Device {
        Device::cpu()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The CPU backend (a unit type; all state is in the buffers).
pub struct CpuBackend;

/// The process-wide CPU backend.
pub fn backend() -> Arc<dyn Backend> {
    static B: OnceLock<Arc<dyn Backend>> = OnceLock::new();
    B.get_or_init(|| Arc::new(CpuBackend)).clone()
}

fn data(b: &Buffer) -> Result<&CpuData> {
    b.as_any()
        .downcast_ref::<CpuBuffer>()
        .map(|c| &c.data)
        .ok_or_else(|| Error::Device("cpu backend was handed a buffer of another device".into()))
}

fn wrap(data: CpuData) -> Buffer {
    Arc::new(CpuBuffer { data })
}

impl Backend for CpuBackend {
    fn name(&self) -> &str {
        "cpu"
    }

    fn allocate(&self, _stream: &Stream, dtype: DType, len: usize) -> Result<Buffer> {
        Ok(wrap(CpuData::zeros(dtype, len)))
    }

    fn upload(&self, _stream: &Stream, dtype: DType, bytes: &[u8]) -> Result<Buffer> {
        Ok(wrap(CpuData::from_bytes(dtype, bytes)))
    }

    fn download(&self, buffer: &Buffer, _dtype: DType, _len: usize) -> Result<Vec<u8>> {
        Ok(data(buffer)?.to_bytes())
    }

    fn run(&self, _stream: &Stream, op: &Primitive, inputs: &[Input<'_>], out: &Meta) -> Result<Buffer> {
        let ins: Vec<&CpuData> = inputs.iter().map(|i| data(i.buffer)).collect::<Result<_>>()?;
        let shapes: Vec<&[usize]> = inputs.iter().map(|i| i.meta.shape.as_slice()).collect();
        let n = crate::shape::numel(&out.shape);
        let result = match op {
            Primitive::Full { value } => CpuData::filled(out.dtype, n, *value),
            Primitive::Arange { start, step } => CpuData::from_f64s(out.dtype, (0..n).map(|i| start + i as f64 * step)),
            Primitive::RandomBits => random::random_bits(ins[0], n)?,
            Primitive::Unary(u) => elementwise::unary(*u, ins[0])?,
            Primitive::Binary(b) => elementwise::binary(*b, ins[0], shapes[0], ins[1], shapes[1], &out.shape)?,
            Primitive::Select => elementwise::select(&ins, &shapes, &out.shape)?,
            Primitive::AsType => ins[0].astype(out.dtype),
            Primitive::Reshape | Primitive::Copy => return Ok(inputs[0].buffer.clone()),
            Primitive::AsStrided { strides, offset } => copy::as_strided(ins[0], &out.shape, strides, *offset),
            Primitive::Reduce { op, axes } => reduce::reduce(*op, ins[0], shapes[0], axes)?,
            Primitive::ArgReduce { op, axis } => reduce::arg_reduce(*op, ins[0], shapes[0], *axis),
            Primitive::Scan { op, axis, reverse } => reduce::scan(*op, ins[0], shapes[0], *axis, *reverse)?,
            Primitive::Concatenate { axis } => copy::concatenate(&ins, &shapes, *axis, &out.shape),
            Primitive::Gather { axis } => copy::gather(ins[0], shapes[0], ins[1], shapes[1], *axis)?,
            Primitive::Scatter { axis, mode } => copy::scatter(&ins, &shapes, *axis, *mode)?,
            Primitive::Matmul { trans_a, trans_b } => {
                matmul::matmul(ins[0], shapes[0], ins[1], shapes[1], &out.shape, (*trans_a, *trans_b))?
            }
            #[allow(unreachable_patterns)]
            other => {
                return Err(Error::Unsupported {
                    backend: "cpu".into(),
                    msg: format!("no kernel for {}", other.name()),
                });
            }
        };
        debug_assert_eq!(result.dtype(), out.dtype, "{}", op.name());
        Ok(wrap(result))
    }

    fn synchronize(&self, _stream: &Stream) -> Result<()> {
        // CPU kernels run to completion inside `run`.
        Ok(())
    }
}

pub(crate) fn unsupported(op: &str, dtype: DType) -> Error {
    Error::Unsupported { backend: "cpu".into(), msg: format!("{op} has no kernel for {dtype}") }
}
