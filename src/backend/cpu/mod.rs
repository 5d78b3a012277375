//! The CPU backend: host memory, every primitive, threads (rayon) on large arrays.
//! Always built, whatever the features; its data layout stays private ([`backend`] is
//! the public way in).

mod broadcast;
mod copy;
mod elementwise;
mod fused;
mod kernels;
mod math;
mod matmul;
pub(crate) mod pool;
pub(crate) mod random;
mod reduce;
mod reduce_fast;
mod scalar;
mod simd;
mod slices;
mod storage;

use std::any::Any;
use std::sync::{Arc, OnceLock};

pub(crate) use storage::CpuData;

use crate::backend::{Backend, Buffer, DeviceBuffer, Input};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::primitive::{Meta, Primitive};
use crate::stream::{Device, Stream};

/// Arrays with at least this many elements are split across threads.
pub(crate) const PAR_MIN: usize = 1 << 15;

/// A CPU buffer: typed host data.
#[derive(Debug)]
pub(crate) struct CpuBuffer {
    /// The data.
    pub(crate) data: CpuData,
}

impl CpuBuffer {
    /// Wraps `data`, counting its bytes as active CPU memory until the buffer drops.
    pub(crate) fn new(data: CpuData) -> Self {
        crate::memory::CPU.add(data.byte_len());
        CpuBuffer { data }
    }
}

impl Drop for CpuBuffer {
    fn drop(&mut self) {
        crate::memory::CPU.sub(self.data.byte_len());
        // A large vector goes back to the pool (an empty one takes its place: no allocation).
        if self.data.capacity_bytes() >= pool::MIN_BYTES {
            pool::release(std::mem::replace(&mut self.data, CpuData::Bool(Vec::new())));
        }
    }
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
    Arc::new(CpuBuffer::new(data))
}

impl Backend for CpuBackend {
    fn name(&self) -> &str {
        "cpu"
    }

    fn upload(&self, _stream: &Stream, dtype: DType, bytes: &[u8]) -> Result<Buffer> {
        crate::memory::CPU.check(|| "cpu: upload".into(), bytes.len() as u64)?;
        Ok(wrap(CpuData::from_bytes(dtype, bytes)))
    }

    fn download(&self, buffer: &Buffer) -> Result<Vec<u8>> {
        Ok(data(buffer)?.to_bytes())
    }

    fn run(&self, _stream: &Stream, op: &Primitive, inputs: &[Input<'_>], outs: &[Meta]) -> Result<Vec<Buffer>> {
        let [out] = outs else {
            return Err(Error::unsupported("cpu", format!("{} with {} outputs", op.name(), outs.len())));
        };
        crate::memory::CPU.check(|| format!("cpu: {} output", op.name()), out.nbytes())?;
        probe_allocation(op, inputs, out)?;
        let args = kernels::Args {
            ins: inputs.iter().map(|i| data(i.buffer)).collect::<Result<_>>()?,
            shapes: inputs.iter().map(|i| i.meta.shape.as_slice()).collect(),
            raw: inputs,
            out,
        };
        let result = crate::backend::dispatch::<kernels::Args<'_>>(op, &args)?;
        debug_assert_eq!(data(&result).map(CpuData::dtype).ok(), Some(out.dtype), "{}", op.name());
        Ok(vec![result])
    }

    fn synchronize(&self, _stream: &Stream) -> Result<()> {
        // CPU kernels run to completion inside `run`.
        Ok(())
    }

    fn fuser(&self) -> Option<&'static dyn crate::fusion::Fuser> {
        Some(&fused::CpuFuser)
    }
}

/// Working sets at least this large are probed before their kernel runs.
const PROBE_MIN: usize = 1 << 28;

/// Asks the allocator for a kernel's working set (and gives it back) before the kernel
/// builds its output with ordinary, infallible collection: an allocation the system
/// refuses would otherwise abort the process ("memory allocation of N bytes failed").
/// The working set counts the output plus an 8-byte-per-element copy of each input, the
/// widest a CPU kernel makes (reductions and scans accumulate in f64 or i64). The probe
/// maps and unmaps untouched pages, so only large working sets take it.
fn probe_allocation(op: &Primitive, inputs: &[Input<'_>], out: &Meta) -> Result<()> {
    let out_bytes = crate::shape::check_size(op.name(), &out.shape, out.dtype)?;
    let widened = inputs.iter().fold(0usize, |acc, i| acc.saturating_add(i.meta.numel().saturating_mul(8)));
    let bytes = out_bytes.saturating_add(widened);
    probe_bytes(bytes, || {
        format!("cpu: {} of shape {:?} (output and working copies of its inputs)", op.name(), out.shape)
    })
}

/// The probe of [`probe_allocation`] for a working set of `bytes`, described by `what`.
pub(super) fn probe_bytes(bytes: usize, what: impl Fn() -> String) -> Result<()> {
    if bytes >= PROBE_MIN {
        // Where the system overcommits (vm.overcommit_memory=1), the reservation below
        // succeeds for any size and the kernel is killed later: compare with the machine.
        if let Some(total) = host_memory().filter(|&t| bytes as u64 > t) {
            return Err(Error::out_of_memory(what(), bytes as u64, Some(total)));
        }
        let mut v: Vec<u8> = Vec::new();
        v.try_reserve_exact(bytes).map_err(|_| Error::out_of_memory(what(), bytes as u64, None))?;
    }
    Ok(())
}

/// Physical memory plus swap in bytes, from `/proc/meminfo` (Linux); `None` elsewhere,
/// where the allocator's answer alone decides.
fn host_memory() -> Option<u64> {
    static TOTAL: OnceLock<Option<u64>> = OnceLock::new();
    *TOTAL.get_or_init(|| {
        let info = std::fs::read_to_string("/proc/meminfo").ok()?;
        let kib = |key: &str| -> Option<u64> {
            let line = info.lines().find(|l| l.starts_with(key))?;
            line.split_whitespace().nth(1)?.parse().ok()
        };
        Some((kib("MemTotal:")? + kib("SwapTotal:").unwrap_or(0)) * 1024)
    })
}

pub(crate) fn unsupported(op: &str, dtype: DType) -> Error {
    Error::Unsupported { backend: "cpu".into(), msg: format!("{op} has no kernel for {dtype}") }
}
