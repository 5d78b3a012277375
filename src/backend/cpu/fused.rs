//! Fused regions on the CPU: one pass over the output in chunks, each value of the
//! program computed chunk by chunk, so no full-size temporary exists between steps.
//!
//! Each step runs the same kernel the unfused primitive runs, on a chunk, so fused and
//! unfused results are identical (bit for bit) on the CPU. Chunks are small enough that a
//! program's live values stay in the core's cache, and they spread over threads.

use rayon::prelude::*;

use super::elementwise;
use super::storage::{CpuData, CpuElem, map_data, with_data};
use super::{PAR_MIN, data, wrap};
use crate::backend::{Buffer, Input};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::fusion::{Fuser, Limits, Program, Step};
use crate::primitive::{Meta, Primitive};
use crate::shape::{StridedIter, broadcast_strides};
use crate::stream::Stream;

/// Elements per chunk: 8 KiB of f32 per live value (a 10-step program keeps well inside
/// L2), and enough work per chunk that the per-step dispatch is noise.
const CHUNK: usize = 2048;

/// The CPU's fuser.
pub(crate) struct CpuFuser;

impl Fuser for CpuFuser {
    fn limits(&self) -> Limits {
        // No binding limit on the CPU; the step bound keeps programs' chunk sets small.
        Limits { max_inputs: 16, max_steps: 64 }
    }

    fn accepts(&self, op: &Primitive, _inputs: &[&Meta], _output: &Meta) -> bool {
        // Every elementwise step runs its own kernel per chunk, so every dtype works;
        // reductions are not fused on the CPU yet (a prologue would need chunked reducing).
        match op {
            Primitive::Full(_) | Primitive::Unary(_) | Primitive::Binary(_) | Primitive::Select(_) => true,
            Primitive::AsType(_) => true,
            Primitive::Arange(_)
            | Primitive::RandomBits(_)
            | Primitive::Reshape(_)
            | Primitive::AsStrided(_)
            | Primitive::Copy(_)
            | Primitive::Reduce(_)
            | Primitive::ArgReduce(_)
            | Primitive::Scan(_)
            | Primitive::Concatenate(_)
            | Primitive::Gather(_)
            | Primitive::Scatter(_)
            | Primitive::Matmul(_)
            | Primitive::Marker(_) => false,
        }
    }

    fn run(&self, _stream: &Stream, program: &Program, inputs: &[Input<'_>]) -> Result<Buffer> {
        if program.reduction.is_some() {
            return Err(Error::unsupported("cpu", "fused reductions"));
        }
        let ins: Vec<&CpuData> = inputs.iter().map(|i| data(i.buffer)).collect::<Result<_>>()?;
        let n = program.output.numel();
        // The chunks and the joined output exist together for a moment: twice the output.
        let out_bytes = crate::shape::check_size("fused", &program.output.shape, program.output.dtype)?;
        super::probe_bytes(out_bytes.saturating_mul(2), || {
            format!("cpu: a fused region of shape {:?} (its output, built in chunks)", program.output.shape)
        })?;
        let chunks = n.div_ceil(CHUNK);
        let run = |c: usize| run_chunk(program, &ins, c * CHUNK, ((c + 1) * CHUNK).min(n));
        let parts: Vec<CpuData> = if n >= PAR_MIN {
            (0..chunks).into_par_iter().map(run).collect::<Result<_>>()?
        } else {
            (0..chunks).map(run).collect::<Result<_>>()?
        };
        Ok(wrap(concat(program.output.dtype, parts)?))
    }
}

/// One value of a chunk: `len` elements, or one element standing for all of them.
struct Value {
    data: CpuData,
    scalar: bool,
}

impl Value {
    fn shape(&self, len: usize) -> [usize; 1] {
        [if self.scalar { 1 } else { len }]
    }
}

/// Output elements `start..end` of the program.
fn run_chunk(p: &Program, ins: &[&CpuData], start: usize, end: usize) -> Result<CpuData> {
    let len = end - start;
    let out = [len];
    let mut vals: Vec<Value> = Vec::with_capacity(p.steps.len());
    for &(step, dtype) in &p.steps {
        let v = match step {
            Step::Input(k) => read_input(ins[k], &p.inputs[k].shape, &p.shape, start, len),
            Step::Const(c) => Value { data: CpuData::filled(dtype, 1, c), scalar: true },
            Step::Unary(op, a) => Value { data: elementwise::unary(op, &vals[a].data)?, scalar: vals[a].scalar },
            Step::Binary(op, a, b) => {
                let (x, y) = (&vals[a], &vals[b]);
                let scalar = x.scalar && y.scalar;
                let o = if scalar { [1] } else { out };
                Value { data: elementwise::binary(op, &x.data, &x.shape(len), &y.data, &y.shape(len), &o)?, scalar }
            }
            Step::Select(c, a, b) => {
                let (c, x, y) = (&vals[c], &vals[a], &vals[b]);
                let scalar = c.scalar && x.scalar && y.scalar;
                let o = if scalar { [1] } else { out };
                let shapes: [&[usize]; 3] = [&c.shape(len), &x.shape(len), &y.shape(len)];
                Value { data: elementwise::select(&[&c.data, &x.data, &y.data], &shapes, &o)?, scalar }
            }
            Step::Cast(a) => Value { data: vals[a].data.astype(dtype), scalar: vals[a].scalar },
        };
        if v.data.dtype() != dtype {
            return Err(Error::Internal(format!("fused step {step:?} gave {} for {dtype}", v.data.dtype())));
        }
        vals.push(v);
    }
    let r = vals.swap_remove(p.result);
    Ok(if r.scalar { broadcast_scalar(&r.data, len) } else { r.data })
}

/// Input elements for output elements `start..start+len`: a slice when the input has the
/// output's size, one element when it has one, else a gather along broadcast strides.
fn read_input(d: &CpuData, shape: &[usize], out: &[usize], start: usize, len: usize) -> Value {
    let n = crate::shape::numel(shape);
    if n == 1 {
        return Value { data: map_data!(d, |v| v[..1].to_vec()), scalar: true };
    }
    if n == crate::shape::numel(out) {
        return Value { data: map_data!(d, |v| v[start..start + len].to_vec()), scalar: false };
    }
    let strides = broadcast_strides(shape, out);
    let data = map_data!(d, |v| StridedIter::from_flat(out, &strides, 0, start).take(len).map(|i| v[i]).collect());
    Value { data, scalar: false }
}

fn broadcast_scalar(d: &CpuData, len: usize) -> CpuData {
    map_data!(d, |v| vec![v[0]; len])
}

fn concat(dtype: DType, parts: Vec<CpuData>) -> Result<CpuData> {
    fn join<T: CpuElem>(parts: &[CpuData]) -> Result<Vec<T>> {
        let mut out = Vec::with_capacity(parts.iter().map(|p| with_data!(p, |v| v.len())).sum());
        for p in parts {
            out.extend_from_slice(T::unwrap(p).ok_or_else(|| Error::Internal("fused chunks of mixed dtypes".into()))?);
        }
        Ok(out)
    }
    Ok(match dtype {
        DType::Bool => CpuData::Bool(join(&parts)?),
        DType::U32 => CpuData::U32(join(&parts)?),
        DType::I32 => CpuData::I32(join(&parts)?),
        DType::I64 => CpuData::I64(join(&parts)?),
        DType::F16 => CpuData::F16(join(&parts)?),
        DType::BF16 => CpuData::BF16(join(&parts)?),
        DType::F32 => CpuData::F32(join(&parts)?),
        DType::F64 => CpuData::F64(join(&parts)?),
    })
}
