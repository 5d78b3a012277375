//! Fused regions on the GPU: one generated WGSL kernel per region, every step a call of
//! the function its own kernel calls (`unary_t`, `binary_t`, `compare_t` of
//! `types_float.wgsl`), so fused and unfused f32 results agree bit for bit up to what the
//! shader compiler itself contracts (it may fuse a multiply and an add it now sees side by
//! side: see ARCHITECTURE.md, Fusion). Elementwise programs take four elements a thread
//! when no input is strided, one otherwise; programs that reduce run one row a workgroup.
//!
//! Kernels are cached by their generated text (the library before it never changes),
//! which the program's structure fixes (steps, dtypes, which inputs are read flat, as a
//! scalar or with strides); shapes, strides and constants travel in [`FusedParams`], so
//! one kernel serves every size and value.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::{Mutex, OnceLock};

use super::buffer::{GpuBuffer, alloc};
use super::context::{Context, context};
use super::encoder::{dispatch, dispatch_1d, grid};
use super::params::{FusedParams, FusedReduceParams, MAX_FUSED_CONSTS, MAX_FUSED_INPUTS, MAX_RANK};
use super::pipeline::check_rank;
use super::{gpu_buf, i32_param, u32_param};
use crate::backend::{Buffer, Input};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::fusion::{Fuser, Limits, Program, Step};
use crate::primitive::{Meta, Primitive};
use crate::shape::{broadcast_strides, merge_axes, numel};
use crate::stream::Stream;

/// The GPU's fuser.
pub(crate) struct GpuFuser;

/// A fused reduction needs at least this many outputs (workgroups) ...
const REDUCE_MIN_OUTPUTS: usize = 64;
/// ... and this many reduced elements per output (one per thread of the workgroup).
const REDUCE_MIN_LEN: usize = 256;

/// Dtypes a generated kernel computes in: f32 values, and bool (a u32 word, 0 or 1) for
/// comparisons and conditions. Other dtypes run unfused.
fn fusable(d: DType) -> bool {
    match d {
        DType::F32 | DType::Bool => true,
        DType::F16 | DType::BF16 | DType::F64 | DType::I32 | DType::U32 | DType::I64 => false,
    }
}

impl Fuser for GpuFuser {
    fn limits(&self) -> Limits {
        // Parameters and output take two bindings.
        let device = context().map(|c| c.limits.max_storage_buffers_per_shader_stage as usize).unwrap_or(0);
        Limits {
            max_inputs: MAX_FUSED_INPUTS.min(device.saturating_sub(2)),
            max_steps: 48,
            lone_broadcasts: true,
            row_regions: true,
        }
    }

    fn accepts(&self, op: &Primitive, inputs: &[&Meta], output: &Meta) -> bool {
        let d: Vec<DType> = inputs.iter().map(|m| m.dtype).collect();
        let out = output.dtype;
        match op {
            Primitive::Full(_) => fusable(out),
            Primitive::Unary(_) => d == [DType::F32] && fusable(out),
            Primitive::Binary(_) => d == [DType::F32, DType::F32] && fusable(out),
            Primitive::Select(_) => d == [DType::Bool, DType::F32, DType::F32],
            Primitive::AsType(_) => matches!(d[..], [DType::F32 | DType::Bool]) && out == DType::F32,
            Primitive::Reduce(_) => {
                // One workgroup per output: worth it with enough outputs to fill the device
                // and rows long enough to keep 256 threads busy (softmax, layer_norm, var
                // over rows); a sum of everything keeps the multi-pass kernels.
                let (outs, len) = (output.numel(), inputs[0].numel() / output.numel().max(1));
                d == [DType::F32] && out == DType::F32 && outs >= REDUCE_MIN_OUTPUTS && len >= REDUCE_MIN_LEN
            }
            Primitive::Arange(_)
            | Primitive::RandomBits(_)
            | Primitive::Reshape(_)
            | Primitive::AsStrided(_)
            | Primitive::Copy(_)
            | Primitive::ArgReduce(_)
            | Primitive::Scan(_)
            | Primitive::Concatenate(_)
            | Primitive::Gather(_)
            | Primitive::Scatter(_)
            | Primitive::Matmul(_)
            | Primitive::Marker(_)
            | Primitive::Fused(_) => false,
        }
    }

    fn run(&self, s: &Stream, program: &Program, inputs: &[Input<'_>]) -> Result<Vec<Buffer>> {
        let ctx = context()?;
        ctx.check()?;
        let pipeline = program_pipeline(ctx, program)?;
        let n = program.output.numel();
        let ins: Vec<&GpuBuffer> = inputs.iter().map(|i| gpu_buf(i.buffer)).collect::<Result<_>>()?;
        let out = alloc(s, program.output.dtype, n)?;
        let extras: Vec<GpuBuffer> = program
            .extra_outputs
            .iter()
            .map(|&v| alloc(s, program.steps[v].1, numel(&program.shape)))
            .collect::<Result<_>>()?;
        let mut bindings: Vec<(u32, &GpuBuffer)> = ins.iter().enumerate().map(|(k, b)| (1 + k as u32, *b)).collect();
        bindings.push((1 + ins.len() as u32, &out));
        for (j, e) in extras.iter().enumerate() {
            bindings.push((2 + (ins.len() + j) as u32, e));
        }
        if program.reduces() {
            // One workgroup of 256 threads per row.
            let w = reduce_params(program)?;
            dispatch(s, &pipeline, &w, &bindings, grid(ctx, w.n as usize * 256)?)?;
        } else {
            let w = params(program, wide_vectors(ctx))?;
            dispatch_1d(s, &pipeline, &w, &bindings, w.n as usize)?;
        }
        super::announce_ready()?;
        let mut outs: Vec<Buffer> = vec![std::sync::Arc::new(out)];
        outs.extend(extras.into_iter().map(|e| std::sync::Arc::new(e) as Buffer));
        Ok(outs)
    }
}

/// How a kernel reads input `k` at output element `i`.
#[derive(Clone, Copy, PartialEq)]
enum Read {
    /// Same size as the output: element `i`.
    Flat,
    /// One element for all.
    Scalar,
    /// Along broadcast strides.
    Strided,
}

fn read_of(input: &Meta, n: usize) -> Read {
    match numel(&input.shape) {
        1 => Read::Scalar,
        m if m == n => Read::Flat,
        _ => Read::Strided,
    }
}

/// WGSL storage element of a dtype the kernel takes.
fn wgsl_type(d: DType) -> Result<&'static str> {
    match d {
        DType::F32 => Ok("f32"),
        DType::Bool => Ok("u32"),
        DType::F16 | DType::BF16 | DType::F64 | DType::I32 | DType::U32 | DType::I64 => {
            Err(Error::Internal(format!("a fused GPU kernel got a {d} value")))
        }
    }
}

/// Every f32 step's value passes through `keep` (and an operand a step reads twice,
/// through it once more): an xor with `P.zero`, which is 0 but unknown to the shader
/// compiler, so it cannot rewrite arithmetic across steps. Under WGSL's finite-math
/// licence lavapipe folded `(y + b) - b` to `y` and `q - q` to 0 in fused kernels, giving
/// 1 where IEEE arithmetic (and the unfused kernels) give 0, and 0 where they give NaN.
/// It also keeps the compiler from contracting a multiply and an add of two steps into
/// one rounding (one step's own arithmetic may still be contracted, as unfused).
const KEEP: &str = "fn keep(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) ^ P.zero); }
fn keep4(x: vec4<f32>) -> vec4<f32> { return bitcast<vec4<f32>>(bitcast<vec4<u32>>(x) ^ vec4<u32>(P.zero)); }
";

/// The WGSL text of the program's kernel, entry point `main`: the f32 library, then
/// [`kernel`]. Public to the crate's tests through [`crate::backend::gpu::fused_source`].
pub(crate) fn source(p: &Program) -> Result<String> {
    let mut s = super::shader::f32_library();
    s.push_str(&kernel(p, WIDE_VECTORS)?);
    Ok(s)
}

/// The program's own part of its kernel (bindings, `main`), which alone varies between
/// programs: the pipeline cache's key, so a run hashes a few hundred bytes instead of the
/// whole library.
/// `vectors`: see [`wide_vectors`].
fn kernel(p: &Program, vectors: u32) -> Result<String> {
    if p.inputs.len() > MAX_FUSED_INPUTS {
        return Err(Error::Internal(format!("a fused region of {} inputs", p.inputs.len())));
    }
    let params = if p.reduces() { "FusedReduceParams" } else { "FusedParams" };
    let mut s = String::with_capacity(2048);
    let _ = writeln!(s, "\n// ---- generated fused kernel ----\n@group(0) @binding(0) var<storage, read> P: {params};");
    s.push_str(KEEP);
    // Four elements a thread (or a row's thread per step) where the layout allows: one
    // element a thread held the 5-op chain and gelu to 0.47 ms per 64M elements on an H200
    // whatever bytes they moved (BENCHMARKS.md, session 7).
    let vec4 = vec4_inputs(p);
    let array = |d: DType, wide: bool| -> Result<String> {
        let t = wgsl_type(d)?;
        Ok(if wide { format!("array<vec4<{t}>>") } else { format!("array<{t}>") })
    };
    for (k, m) in p.inputs.iter().enumerate() {
        let wide = vec4.as_ref().is_some_and(|w| w[k]);
        let _ = writeln!(s, "@group(0) @binding({}) var<storage, read> IN{k}: {};", k + 1, array(m.dtype, wide)?);
    }
    // A reduction root writes one value a row.
    let wide_out = vec4.is_some() && p.reduction.is_none();
    let _ = writeln!(
        s,
        "@group(0) @binding({}) var<storage, read_write> OUT: {};",
        p.inputs.len() + 1,
        array(p.output.dtype, wide_out)?
    );
    if p.reduction.is_some() && !p.extra_outputs.is_empty() {
        return Err(Error::Internal("a fused reduction with extra outputs".into()));
    }
    for (j, &v) in p.extra_outputs.iter().enumerate() {
        let d = p.steps.get(v).ok_or_else(|| Error::Internal(format!("extra output v{v}")))?.1;
        let _ = writeln!(
            s,
            "@group(0) @binding({}) var<storage, read_write> OUT{}: {};",
            p.inputs.len() + 2 + j,
            j + 1,
            array(d, wide_out)?
        );
    }
    if p.reduces() {
        row_kernel(&mut s, p, vec4.is_some())?;
    } else {
        elementwise_kernel(&mut s, p, vec4.is_some().then_some(vectors))?;
    }
    Ok(s)
}

/// Vectors of four a thread of a four-lane elementwise kernel loads and writes, the
/// `u`-th at `i + u * n` so that each round of loads stays coalesced. Two keep more loads
/// in flight per thread: on an H200 the fused 64M-element chain went from 3584-3590 to
/// 4154-4186 GB/s and gelu from 2872-2906 to 3572-3692 (BENCHMARKS.md, session 16).
const WIDE_VECTORS: u32 = 2;

/// [`WIDE_VECTORS`] on this device: one on a software adapter, whose "GPU" is the host's
/// cores with no memory latency to hide, and where the doubled kernel body only costs
/// compile time (lavapipe: `tests/gpu_timeout.rs` went from 3.5-3.9 to 4.1-4.7 s).
/// `LAZULI_WIDE_VECTORS` (1 to 4) overrides, to measure.
fn wide_vectors(ctx: &Context) -> u32 {
    static V: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *V.get_or_init(|| {
        let native = if ctx.info.device_type == wgpu::DeviceType::Cpu { 1 } else { WIDE_VECTORS };
        std::env::var("LAZULI_WIDE_VECTORS").ok().and_then(|v| v.parse().ok()).unwrap_or(native).clamp(1, 4)
    })
}

/// Which inputs the kernel reads as `vec4`s, when it takes four elements at a time; `None`
/// when it takes one. Every buffer's size is a multiple of 16 bytes (`buffer::bucket`), so
/// a last vector is in bounds.
/// - An elementwise program whose inputs are all flat or scalar: each thread takes four
///   consecutive elements (lanes past the end compute on whatever is there and land in
///   the output's padding).
/// - A program that reduces rows of a length divisible by four, every input and the output
///   read along the row in one run of stride 1 or 0, the row offsets of the runs of
///   stride 1 divisible by four: each thread folds (and writes) four consecutive elements
///   of its row per step.
fn vec4_inputs(p: &Program) -> Option<Vec<bool>> {
    let n = p.output.numel();
    if !p.reduces() {
        let reads: Vec<Read> = p.inputs.iter().map(|m| read_of(m, n)).collect();
        return (!reads.contains(&Read::Strided)).then(|| reads.iter().map(|&r| r == Read::Flat).collect());
    }
    let ((_, kst), (rshape, rst)) = reduce_layout(p);
    if !numel(&rshape).is_multiple_of(4) {
        return None;
    }
    // Input `k`'s read along the row (the output's, `k` = the number of inputs, its strides
    // last in `reduce_layout`): `Some(true)` vectors of the run, `Some(false)` one value
    // for the row, `None` where four lanes do not fit (strides, or misaligned offsets).
    let lane = |k: usize| match reduce_read(&rshape, &rst, k) {
        _ if k < p.inputs.len() && numel(&p.inputs[k].shape) == 1 => Some(false),
        Read::Flat => kst[k].iter().all(|st| st % 4 == 0).then_some(true),
        Read::Scalar => Some(false),
        Read::Strided => None,
    };
    // A reduction root writes one value a row; any other root every element.
    if p.reduction.is_none() && lane(p.inputs.len()) != Some(true) {
        return None;
    }
    (0..p.inputs.len()).map(lane).collect()
}

/// The kernel of an elementwise program: the steps as a function `elem` of the values read
/// at one element (flat and strided inputs as arguments, scalars read inside), called once
/// a thread, or four times per `vec4` over [`wide_vectors`] vectors when `wide`
/// ([`vec4_inputs`] says so).
fn elementwise_kernel(s: &mut String, p: &Program, wide: Option<u32>) -> Result<()> {
    let n = p.output.numel();
    let args: Vec<usize> = (0..p.inputs.len()).filter(|&k| read_of(&p.inputs[k], n) != Read::Scalar).collect();
    let mut outs: Vec<usize> = vec![p.result];
    outs.extend(&p.extra_outputs);
    let _ = writeln!(s, "\nstruct Elem {{");
    for (j, &v) in outs.iter().enumerate() {
        let _ = writeln!(s, "    o{j}: {},", wgsl_type(p.steps[v].1)?);
    }
    let params: Vec<String> =
        args.iter().map(|&k| Ok(format!("x{k}: {}", wgsl_type(p.inputs[k].dtype)?))).collect::<Result<_>>()?;
    let _ = writeln!(s, "}}\n\nfn elem({}) -> Elem {{", params.join(", "));
    let read = |k: usize| if args.contains(&k) { format!("x{k}") } else { format!("IN{k}[0]") };
    steps(s, p, "    ", &vec![true; p.steps.len()], &vec![false; p.steps.len()], false, read)?;
    let vals: Vec<String> = outs.iter().map(|v| format!("v{v}")).collect();
    let _ = writeln!(s, "    return Elem({});\n}}", vals.join(", "));
    s.push_str(
        "\n@compute @workgroup_size(256)\nfn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,\n        @builtin(local_invocation_index) lid: u32) {\n    let i = flat_id(wid, nwg, lid);\n    if i >= P.n { return; }\n",
    );
    // Element `i`'s values (or vector `i`'s, four lanes) into the outputs.
    let store = |s: &mut String, lanes: &[String]| {
        for j in 0..outs.len() {
            let name = if j == 0 { "OUT".to_string() } else { format!("OUT{j}") };
            let vals: Vec<String> = lanes.iter().map(|e| format!("{e}.o{j}")).collect();
            let v = if lanes.len() == 1 { vals[0].clone() } else { format!("vec4({})", vals.join(", ")) };
            let _ = writeln!(s, "    {name}[i] = {v};");
        }
    };
    if let Some(vecs) = wide {
        // Vector u of the thread is vector i + u * P.n (see `wide_vectors`); every load
        // first (clamped in bounds: the last thread may have fewer), then the stores.
        for u in 0..vecs {
            if u == 0 {
                let _ = writeln!(s, "    let i0 = i;");
            } else {
                let _ = writeln!(s, "    let i{u} = min(i + {u}u * P.n, P.vectors - 1u);");
            }
            for &k in &args {
                let ty = wgsl_type(p.inputs[k].dtype)?;
                let _ = writeln!(s, "    let a{k}_{u}: vec4<{ty}> = IN{k}[i{u}];");
            }
        }
        for u in 0..vecs {
            for c in ["x", "y", "z", "w"] {
                let a: Vec<String> = args.iter().map(|k| format!("a{k}_{u}.{c}")).collect();
                let _ = writeln!(s, "    let e{c}{u} = elem({});", a.join(", "));
            }
        }
        for u in 0..vecs {
            let lanes: Vec<String> = ["x", "y", "z", "w"].iter().map(|c| format!("e{c}{u}")).collect();
            let mut t = String::new();
            store(&mut t, &lanes);
            let t = t.replace("[i]", &format!("[i{u}]"));
            if u == 0 {
                s.push_str(&t);
            } else {
                let _ = writeln!(s, "    if i + {u}u * P.n < P.vectors {{\n{t}    }}");
            }
        }
        s.push_str("}\n");
        return Ok(());
    }
    // Strided inputs share the output element's coordinates over the merged axes,
    // computed once, unrolled for the rank (a loop over arrays copied out of `P`
    // spills to local memory: `x - max` over rows ran at a fraction of bandwidth).
    let rank = layout(p).0.len();
    let _ = writeln!(s, "    var q = i;");
    for d in (0..rank).rev() {
        if d == 0 {
            let _ = writeln!(s, "    let c0 = q;");
        } else {
            let _ = writeln!(s, "    let c{d} = q % P.shape[{d}];\n    q = q / P.shape[{d}];");
        }
    }
    let a: Vec<String> = args
        .iter()
        .map(|&k| match read_of(&p.inputs[k], n) {
            Read::Strided => {
                let terms: Vec<String> = (0..rank).map(|d| format!("i32(c{d}) * P.strides[{k}][{d}]")).collect();
                format!("IN{k}[u32({})]", terms.join(" + "))
            }
            Read::Flat => format!("IN{k}[i]"),
            Read::Scalar => format!("IN{k}[0]"),
        })
        .collect();
    let _ = writeln!(s, "    let e = elem({});", a.join(", "));
    store(s, &["e".to_string()]);
    s.push_str("}\n");
    Ok(())
}

/// How many reductions each value waits for: 0 for inputs and constants, one more than
/// its operand for a [`Step::Reduce`], the most of its operands otherwise.
fn levels(p: &Program) -> Result<Vec<usize>> {
    let mut l: Vec<usize> = Vec::with_capacity(p.steps.len());
    for (v, &(step, _)) in p.steps.iter().enumerate() {
        let ops = step.args();
        if ops.iter().any(|&a| a >= v) {
            return Err(Error::Internal(format!("fused step v{v} reads a later value")));
        }
        let most = ops.iter().map(|&a| l[a]).max().unwrap_or(0);
        l.push(if matches!(step, Step::Reduce(..)) { most + 1 } else { most });
    }
    Ok(l)
}

/// The values a pass must compute to have `targets`: their operands, back to inputs,
/// constants and reductions of earlier passes (which the pass reads, not recomputes).
fn needed(p: &Program, targets: &[usize]) -> Vec<bool> {
    let mut need = vec![false; p.steps.len()];
    let mut stack: Vec<usize> = targets.to_vec();
    while let Some(v) = stack.pop() {
        if std::mem::replace(&mut need[v], true) {
            continue;
        }
        if !matches!(p.steps[v].0, Step::Reduce(..)) {
            stack.extend(p.steps[v].0.args());
        }
    }
    // Reductions are computed by their own pass: a later pass only reads them.
    for (v, (step, _)) in p.steps.iter().enumerate() {
        if matches!(step, Step::Reduce(..)) && !targets.contains(&v) {
            need[v] = false;
        }
    }
    need
}

/// What a row kernel's pass emits at the element(s) `r`: into the text, at an indent, with
/// the resident step if the row is in registers.
type Body<'a> = &'a dyn Fn(&mut String, &str, Option<usize>) -> Result<()>;

/// Most `vec4`s of input a row kernel's thread keeps in registers (see [`row_kernel`]):
/// 64 registers, so a 256-thread workgroup still fits several times on an SM.
const RESIDENT_VECTORS: usize = 16;

/// The kernel of a program that reduces: one workgroup per row (the kept coordinates).
/// Each level of reductions is one pass over the row, every thread folding a strided share
/// of the elements through the steps that level needs, then the group folding the 256
/// partials as the unfused row kernel does (reduce.wgsl); a last pass writes the result
/// at every element (an elementwise root: softmax, layer_norm) or reduces it (a reduction
/// root): one kernel and no temporaries instead of one kernel and one round trip through
/// memory per reduction.
///
/// In the four-lane form, when each thread's share of the row's inputs that vary from row
/// to row fits [`RESIDENT_VECTORS`], the share is loaded once into registers before the
/// first pass (the loops unrolled, the steps a thread takes fixed by the row's length in
/// the kernel's text) and every pass computes from it, so the row is read from memory
/// once. Otherwise passes after the first read the row again, from cache where it still is.
fn row_kernel(s: &mut String, p: &Program, lanes: bool) -> Result<()> {
    let levels = levels(p)?;
    let ((_, kst), (rshape, rst)) = reduce_layout(p);
    let scalar = |k: usize| numel(&p.inputs[k].shape) == 1;
    // With `lanes` (see `vec4_inputs`) each thread takes four consecutive elements a step.
    let (first, step) = if lanes { ("lid * 4u", "1024u") } else { ("lid", "256u") };
    // Inputs kept in registers: read along the row, and different in every row (an input
    // the same for every row, as a layer norm's gain, stays in cache by itself).
    let kept = |k: usize| {
        lanes && !scalar(k) && reduce_read(&rshape, &rst, k) == Read::Flat && kst[k].iter().any(|&st| st != 0)
    };
    let steps_per_row = numel(&rshape).div_ceil(1024);
    // Unrolled only when something is kept: otherwise the unrolling saves nothing and the
    // text would grow with the row (a [64, 1] input times a [1, 2^22] one keeps neither).
    let kept_inputs = (0..p.inputs.len()).filter(|&k| kept(k)).count();
    let resident = (kept_inputs > 0 && kept_inputs * steps_per_row <= RESIDENT_VECTORS).then_some(steps_per_row);
    s.push_str(
        "\nvar<workgroup> PART: array<f32, 256>;\n\n@compute @workgroup_size(256)\nfn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,\n        @builtin(local_invocation_index) lid: u32) {\n    let o = wid.y * nwg.x + wid.x;\n    // Every thread reaches the barriers: bound the work, not the kernel.\n    let live = o < P.n;\n    let len = select(0u, P.len, live);\n",
    );
    let types: Vec<&str> = p.inputs.iter().map(|m| wgsl_type(m.dtype)).collect::<Result<_>>()?;
    for (k, ty) in types.iter().enumerate() {
        if !scalar(k) {
            let _ =
                writeln!(s, "    let ko{k} = select(0i, strided_offset(o, P.krank, P.kshape, P.kstrides[{k}]), live);");
        }
        if let Some(steps) = resident
            && kept(k)
        {
            for j in 0..steps {
                let _ = writeln!(
                    s,
                    "    var in{k}_{j}: vec4<{ty}>;\n    if {first} + {}u < len {{\n        in{k}_{j} = IN{k}[(u32(ko{k}) + {first} + {}u) / 4u];\n    }}",
                    1024 * j,
                    1024 * j
                );
            }
        }
    }
    // One value for the whole row: a vector of four copies in the four-lane form.
    let splat = |k: usize, e: String| if lanes { format!("vec4<{}>({e})", types[k]) } else { e };
    // An input read once a row (one element, or stride 0 along the row), as a scalar.
    let once_a_row = |k: usize| scalar(k) || reduce_read(&rshape, &rst, k) == Read::Scalar;
    let scalar_read = |k: usize| if scalar(k) { format!("IN{k}[0]") } else { format!("IN{k}[u32(ko{k})]") };
    // Input `k` at the element(s) `r` of the row; `j`: the resident step, if resident.
    // (Passes never read an input read once a row: `row_uniform` computes it outside.)
    let read = |k: usize, j: Option<usize>| match (scalar(k), reduce_read(&rshape, &rst, k), j) {
        (false, Read::Flat, Some(j)) if kept(k) => format!("in{k}_{j}"),
        (true, _, _) | (false, Read::Scalar, _) => splat(k, scalar_read(k)),
        (false, Read::Flat, _) if lanes => format!("IN{k}[(u32(ko{k}) + r) / 4u]"),
        (false, Read::Flat, _) => format!("IN{k}[u32(ko{k}) + r]"),
        (false, Read::Strided, _) => {
            format!("IN{k}[u32(ko{k} + strided_offset(r, P.rrank, P.rshape, P.rstrides[{k}]))]")
        }
    };
    // Values the same at every element of the row (from constants, inputs read once a
    // row and reductions) are computed once a thread, as scalars, after the pass that
    // completes them: a layer norm's `sqrt(var / n + eps)` is one value a row, not one
    // per element and lane.
    let hoisted = row_uniform(p, once_a_row);
    let emit_hoisted = |s: &mut String, level: usize| {
        let at: Vec<bool> = (0..p.steps.len())
            .map(|v| hoisted[v] && levels[v] == level && !matches!(p.steps[v].0, Step::Reduce(..)))
            .collect();
        steps(s, p, "    ", &at, &vec![false; p.steps.len()], false, scalar_read)
    };
    // Lane `c` of value `a` in the four-lane form (a one-a-row value is a scalar).
    let lane = |a: usize, c: &str| if hoisted[a] { format!("v{a}") } else { format!("v{a}{c}") };
    // `body` at every element(s) `r` of the thread's share of the row: a loop, or the
    // resident steps unrolled.
    let walk = |s: &mut String, body: Body<'_>| -> Result<()> {
        match resident {
            Some(steps) => {
                for j in 0..steps {
                    let _ = writeln!(
                        s,
                        "        {{\n            let r = {first} + {}u;\n            if r < len {{",
                        1024 * j
                    );
                    body(s, "                ", Some(j))?;
                    let _ = writeln!(s, "            }}\n        }}");
                }
            }
            None => {
                let _ = writeln!(s, "        for (var r = {first}; r < len; r += {step}) {{");
                body(s, "            ", None)?;
                let _ = writeln!(s, "        }}");
            }
        }
        Ok(())
    };
    // One pass per level of reductions; the root reduction is the last level's.
    let depth = levels.iter().zip(&p.steps).filter(|(_, (st, _))| matches!(st, Step::Reduce(..))).map(|(l, _)| *l);
    let depth = depth.max().unwrap_or(0);
    let root_level = depth.max(levels.get(p.result).copied().unwrap_or(0)) + 1;
    let last = if p.reduction.is_some() { root_level } else { depth };
    emit_hoisted(s, 0)?;
    for level in 1..=last {
        // (value folded, its operand, the reduction)
        let mut folds: Vec<(usize, usize, String)> = Vec::new();
        for (v, &(step, _)) in p.steps.iter().enumerate() {
            if let Step::Reduce(op, a) = step
                && levels[v] == level
            {
                folds.push((v, a, op.wgsl_name()));
            }
        }
        if let (Some(op), true) = (p.reduction, level == root_level) {
            folds.push((usize::MAX, p.result, op.wgsl_name()));
        }
        if folds.is_empty() {
            continue;
        }
        let operands: Vec<usize> = folds.iter().map(|f| f.1).collect();
        for &(v, _, _) in &folds {
            if v != usize::MAX {
                let _ = writeln!(s, "    var v{v}: f32;");
            }
        }
        let _ = writeln!(s, "    {{");
        for (j, (_, _, op)) in folds.iter().enumerate() {
            let _ = writeln!(s, "        var acc{j} = acc_identity({op});");
        }
        walk(s, &|s, indent, at| {
            steps(s, p, indent, &needed(p, &operands), &hoisted, lanes, |k| read(k, at))?;
            for (j, &(_, a, ref op)) in folds.iter().enumerate() {
                if lanes {
                    let (x, y, z, w) = (lane(a, ".x"), lane(a, ".y"), lane(a, ".z"), lane(a, ".w"));
                    let _ = writeln!(
                        s,
                        "{indent}acc{j} = acc_op({op}, acc{j}, acc_op({op}, acc_op({op}, {x}, {y}), acc_op({op}, {z}, {w})));"
                    );
                } else {
                    let _ = writeln!(s, "{indent}acc{j} = acc_op({op}, acc{j}, v{a});");
                }
            }
            Ok(())
        })?;
        for (j, (v, _, op)) in folds.iter().enumerate() {
            let v = *v;
            let _ = writeln!(
                s,
                "        PART[lid] = acc{j};\n        workgroupBarrier();\n        for (var h = 128u; h > 0u; h = h >> 1u) {{\n            if lid < h {{\n                PART[lid] = acc_op({op}, PART[lid], PART[lid + h]);\n            }}\n            workgroupBarrier();\n        }}"
            );
            if v == usize::MAX {
                let _ = writeln!(s, "        if live && lid == 0u {{\n            OUT[o] = PART[0];\n        }}");
            } else {
                // Read by every thread before the next fold overwrites PART.
                let _ = writeln!(s, "        v{v} = PART[0];\n        workgroupBarrier();");
            }
        }
        let _ = writeln!(s, "    }}");
        emit_hoisted(s, level)?;
    }
    if p.reduction.is_none() {
        // The last pass writes the result (and extra outputs) at every element of the row.
        let out = reduce_read(&rshape, &rst, p.inputs.len());
        let at = match out {
            Read::Flat if lanes => "(u32(koo) + r) / 4u".to_string(),
            Read::Flat => "u32(koo) + r".to_string(),
            Read::Scalar => "u32(koo)".to_string(),
            Read::Strided => "u32(koo + strided_offset(r, P.rrank, P.rshape, P.orstrides))".to_string(),
        };
        let _ =
            writeln!(s, "    let koo = select(0i, strided_offset(o, P.krank, P.kshape, P.okstrides), live);\n    {{");
        let mut outs: Vec<usize> = p.extra_outputs.clone();
        outs.push(p.result);
        // An output the same along the row is splatted in the four-lane form.
        let value = |v: usize| match lanes && hoisted[v] {
            true => wgsl_type(p.steps[v].1).map(|ty| format!("vec4<{ty}>(v{v})")),
            false => Ok(format!("v{v}")),
        };
        walk(s, &|s, indent, j| {
            steps(s, p, indent, &needed(p, &outs), &hoisted, lanes, |k| read(k, j))?;
            let _ = writeln!(s, "{indent}let dst = {at};");
            for (e, &v) in p.extra_outputs.iter().enumerate() {
                let _ = writeln!(s, "{indent}OUT{}[dst] = {};", e + 1, value(v)?);
            }
            let _ = writeln!(s, "{indent}OUT[dst] = {};", value(p.result)?);
            Ok(())
        })?;
        let _ = writeln!(s, "    }}");
    }
    s.push_str("}\n");
    Ok(())
}

/// One `let` per step that `emit` marks and `once` does not, reading input `k` as
/// `read(k)` gives it. With `lanes`, every value is a `vec4` of four consecutive elements
/// (`read` gives vectors) and each step applies its function lane by lane; a reduced
/// value or one `once` marks (computed once a row, see [`row_uniform`]) is a scalar, and
/// is splatted. Reductions are never emitted: a row kernel's passes compute them.
fn steps(
    s: &mut String,
    p: &Program,
    indent: &str,
    emit: &[bool],
    once: &[bool],
    lanes: bool,
    read: impl Fn(usize) -> String,
) -> Result<()> {
    let consts = const_table(p)?;
    // Operand `a` as a vector (for `select`) and lane `c` of it.
    let one = |a: usize| once[a] || matches!(p.steps[a].0, Step::Reduce(..));
    let x = |a: usize| match lanes && one(a) {
        true => wgsl_type(p.steps[a].1).map(|ty| format!("vec4<{ty}>(v{a})")),
        false => Ok(format!("v{a}")),
    };
    let xl = |a: usize, c: &str| if one(a) { format!("v{a}") } else { format!("v{a}{c}") };
    for (v, &(step, dtype)) in p.steps.iter().enumerate() {
        if !emit[v] || once[v] {
            continue;
        }
        let ty = wgsl_type(dtype)?;
        // `f` of lane `c` (".x" ...; "" for the scalar form), once or per lane.
        let each = |f: &dyn Fn(&str) -> String| {
            if lanes {
                let l: Vec<String> = [".x", ".y", ".z", ".w"].iter().map(|c| f(c)).collect();
                format!("vec4<{ty}>({})", l.join(", "))
            } else {
                f("")
            }
        };
        let expr = match step {
            Step::Input(k) => read(k),
            Step::Const(c) => {
                // The bits of the value the Full kernel stores (`value as f32`, or 0/1).
                let bits = const_bits(c, dtype)?;
                let j = consts.iter().position(|&b| b == bits).unwrap_or_default();
                let scalar = match dtype {
                    DType::F32 => format!("bitcast<f32>(P.consts[{j}])"),
                    _ => format!("P.consts[{j}]"),
                };
                if lanes { format!("vec4<{ty}>({scalar})") } else { scalar }
            }
            Step::Unary(op, a) => match dtype {
                DType::Bool => each(&|c| format!("unary_pred_t({}, {})", op.wgsl_name(), xl(a, c))),
                _ => each(&|c| format!("unary_t({}, {})", op.wgsl_name(), xl(a, c))),
            },
            Step::Binary(op, a, b) => {
                let f = if op.is_comparison() { "compare_t" } else { "binary_t" };
                // An operand read twice goes through `keep` the second time: `x - x` must
                // stay NaN for an infinite x, `x == x` false for a NaN one.
                let second = |c: &str| if a == b { format!("keep({})", xl(b, c)) } else { xl(b, c) };
                each(&|c| format!("{f}({}, {}, {})", op.wgsl_name(), xl(a, c), second(c)))
            }
            Step::Select(c, a, b) if lanes => format!("select({}, {}, {} != vec4<u32>(0u))", x(b)?, x(a)?, x(c)?),
            Step::Select(c, a, b) => format!("select(v{b}, v{a}, v{c} != 0u)"),
            Step::Cast(a) => match (p.steps[a].1, dtype) {
                (DType::Bool, DType::F32) => each(&|c| format!("t_from_bool({} != 0u)", xl(a, c))),
                (DType::F32, DType::F32) => each(&|c| format!("t_from_f32({})", xl(a, c))),
                (from, to) => return Err(Error::Internal(format!("a fused cast from {from} to {to}"))),
            },
            Step::Reduce(..) => {
                return Err(Error::Internal(format!("fused step v{v}: a reduction outside a row kernel's pass")));
            }
        };
        let vty = if lanes { format!("vec4<{ty}>") } else { ty.to_string() };
        // Inputs and constants are loads the compiler cannot see through already.
        let computed = !matches!(step, Step::Input(_) | Step::Const(_));
        let expr = match dtype {
            DType::F32 if computed => format!("{}({expr})", if lanes { "keep4" } else { "keep" }),
            DType::F32 | DType::Bool => expr,
            DType::F16 | DType::BF16 | DType::F64 | DType::I32 | DType::U32 | DType::I64 => {
                return Err(Error::Internal(format!("a fused {dtype} step")));
            }
        };
        let _ = writeln!(s, "{indent}let v{v}: {vty} = {expr};");
    }
    Ok(())
}

/// The bits a constant step holds in [`FusedParams::consts`].
fn const_bits(c: f64, dtype: DType) -> Result<u32> {
    match dtype {
        DType::F32 => Ok((c as f32).to_bits()),
        DType::Bool => Ok(u32::from(c != 0.0)),
        other => Err(Error::Internal(format!("a fused {other} constant"))),
    }
}

/// The distinct constants of a program, in order of first use.
fn const_table(p: &Program) -> Result<Vec<u32>> {
    let mut t = Vec::new();
    for &(step, dtype) in &p.steps {
        if let Step::Const(c) = step {
            let b = const_bits(c, dtype)?;
            if !t.contains(&b) {
                t.push(b);
            }
        }
    }
    if t.len() > MAX_FUSED_CONSTS {
        return Err(Error::unsupported(
            "gpu",
            format!("a fused region of {} distinct constants (at most {MAX_FUSED_CONSTS})", t.len()),
        ));
    }
    Ok(t)
}

/// The program's shape with axes merged where every input allows, and each input's
/// broadcast strides over it: what strided reads index (the kernel's unrolled rank and
/// its parameters must agree, so both come from here).
fn layout(p: &Program) -> (Vec<usize>, Vec<Vec<isize>>) {
    let strides: Vec<Vec<isize>> = p.inputs.iter().map(|m| broadcast_strides(&m.shape, &p.shape)).collect();
    merge_axes(&p.shape, &strides)
}

/// Output size, merged shape, each strided input's broadcast strides and the constants.
fn params(p: &Program, vectors: u32) -> Result<FusedParams> {
    let n = p.output.numel();
    let (shape, strides) = layout(p);
    // A wide kernel's threads take four elements each.
    let wide = vec4_inputs(p).is_some();
    let threads = if wide { n.div_ceil(4) } else { n };
    let mut w = FusedParams { n: u32_param("fused", threads)?, ..Default::default() };
    if wide {
        w.vectors = w.n;
        w.n = u32_param("fused", threads.div_ceil(vectors as usize))?;
    }
    for (slot, b) in w.consts.iter_mut().zip(const_table(p)?) {
        *slot = b;
    }
    if p.inputs.iter().any(|m| read_of(m, n) == Read::Strided) {
        check_rank("fused", shape.len())?;
        w.rank = shape.len() as u32;
        for (i, &d) in shape.iter().enumerate() {
            w.shape[i] = u32_param("fused", d)?;
            for (k, st) in strides.iter().enumerate() {
                w.strides[k][i] = i32_param("fused", st[i])?;
            }
        }
    }
    Ok(w)
}

/// Kept and reduced axes apart, each merged where every input allows, and each input's
/// broadcast strides over both (the output's contiguous strides last).
type Axes = (Vec<usize>, Vec<Vec<isize>>);

/// The values of a program that reduces which are the same at every element of a row:
/// constants, inputs `once_a_row` marks, reductions, and steps of those only.
fn row_uniform(p: &Program, once_a_row: impl Fn(usize) -> bool) -> Vec<bool> {
    let mut uniform: Vec<bool> = Vec::with_capacity(p.steps.len());
    for &(step, _) in &p.steps {
        let u = match step {
            Step::Input(k) => once_a_row(k),
            Step::Const(_) | Step::Reduce(..) => true,
            Step::Unary(..) | Step::Binary(..) | Step::Select(..) | Step::Cast(_) => {
                step.args().iter().all(|&a| uniform.get(a).copied().unwrap_or(false))
            }
        };
        uniform.push(u);
    }
    uniform
}

/// The kept and the reduced axes of a program that reduces, each merged where every
/// input and the output allow, with each input's broadcast strides over them and the
/// output's last (an elementwise root's output is at the program's shape).
fn reduce_layout(p: &Program) -> (Axes, Axes) {
    let mut strides: Vec<Vec<isize>> = p.inputs.iter().map(|m| broadcast_strides(&m.shape, &p.shape)).collect();
    strides.push(broadcast_strides(&p.shape, &p.shape));
    let part = |reduced: bool| {
        let axes: Vec<usize> = (0..p.shape.len()).filter(|a| p.reduce_axes.contains(a) == reduced).collect();
        let shape: Vec<usize> = axes.iter().map(|&a| p.shape[a]).collect();
        let st: Vec<Vec<isize>> = strides.iter().map(|s| axes.iter().map(|&a| s[a]).collect()).collect();
        merge_axes(&shape, &st)
    };
    (part(false), part(true))
}

/// How input `k` (or the output, `k` = the number of inputs) is read along the reduced
/// elements: one run with stride 1 or 0 (rows of a softmax, a per-row mean) skips the
/// index arithmetic.
fn reduce_read(rshape: &[usize], rst: &[Vec<isize>], k: usize) -> Read {
    match (rshape.len(), rst[k].first()) {
        (1, Some(1)) => Read::Flat,
        (1, Some(0)) | (0, _) => Read::Scalar,
        _ => Read::Strided,
    }
}

fn reduce_params(p: &Program) -> Result<FusedReduceParams> {
    if !p.reduces() {
        return Err(Error::Internal("reduce_params of an elementwise region".into()));
    }
    let ((kshape, mut kst), (rshape, mut rst)) = reduce_layout(p);
    check_rank("fused reduction", kshape.len().max(rshape.len()))?;
    let (ok, or) = (kst.pop().unwrap_or_default(), rst.pop().unwrap_or_default());
    let mut w = FusedReduceParams {
        n: u32_param("fused reduction", numel(&kshape))?,
        len: u32_param("fused reduction", numel(&rshape))?,
        krank: kshape.len() as u32,
        rrank: rshape.len() as u32,
        ..Default::default()
    };
    fill(&mut w.kshape, &mut w.kstrides, &kshape, &kst)?;
    fill(&mut w.rshape, &mut w.rstrides, &rshape, &rst)?;
    for (i, &st) in ok.iter().enumerate() {
        w.okstrides[i] = i32_param("fused reduction", st)?;
    }
    for (i, &st) in or.iter().enumerate() {
        w.orstrides[i] = i32_param("fused reduction", st)?;
    }
    for (slot, b) in w.consts.iter_mut().zip(const_table(p)?) {
        *slot = b;
    }
    Ok(w)
}

fn fill(
    shape_out: &mut [u32; MAX_RANK],
    strides_out: &mut [[i32; MAX_RANK]; MAX_FUSED_INPUTS],
    shape: &[usize],
    strides: &[Vec<isize>],
) -> Result<()> {
    for (i, &d) in shape.iter().enumerate() {
        shape_out[i] = u32_param("fused reduction", d)?;
        for (k, st) in strides.iter().enumerate() {
            strides_out[k][i] = i32_param("fused reduction", st[i])?;
        }
    }
    Ok(())
}

/// Generated kernels kept at most; beyond it the least recently used goes (a program
/// that changes structure every call must not grow memory without bound).
const CACHE_CAP: usize = 256;

/// Pipelines by key; beyond [`CACHE_CAP`] the least recently used goes.
struct Kept<K>(HashMap<K, (wgpu::ComputePipeline, u64)>);

impl<K: Clone + Eq + std::hash::Hash> Kept<K> {
    /// The pipeline kept for `key`, marked used at `now`.
    fn get<Q: Eq + std::hash::Hash + ?Sized>(&mut self, key: &Q, now: u64) -> Option<wgpu::ComputePipeline>
    where
        K: std::borrow::Borrow<Q>,
    {
        let (p, used) = self.0.get_mut(key)?;
        *used = now;
        Some(p.clone())
    }

    /// Keeps `p` for `key`, used at `now`, first dropping the least recently used entry
    /// if the map is full.
    fn insert(&mut self, key: K, p: wgpu::ComputePipeline, now: u64) {
        if self.0.len() >= CACHE_CAP
            && let Some(oldest) = self.0.iter().min_by_key(|(_, (_, used))| *used).map(|(k, _)| k.clone())
        {
            self.0.remove(&oldest);
            log::debug!("gpu: fused-kernel cache full ({CACHE_CAP}); dropped the least recently used");
        }
        self.0.insert(key, (p, now));
    }
}

struct Cache {
    /// By kernel text: programs that differ only in what the text does not show (sizes,
    /// constant values) share a kernel.
    pipelines: Kept<String>,
    /// By program: a program that ran before finds its kernel without generating the
    /// text, which cost about 50 us per eval for layer_norm's row kernel on the 2-core
    /// development machine (more than planning the eval took).
    programs: Kept<Program>,
    /// Counts lookups: the "used" stamp of both maps.
    clock: u64,
}

impl Cache {
    /// The next "used" stamp.
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }
}

/// The cache, locked.
fn cache() -> std::sync::MutexGuard<'static, Cache> {
    // Leaked with the device that owns the pipelines (as pipeline.rs's cache).
    static C: OnceLock<&'static Mutex<Cache>> = OnceLock::new();
    let c = C.get_or_init(|| {
        Box::leak(Box::new(Mutex::new(Cache {
            pipelines: Kept(HashMap::new()),
            programs: Kept(HashMap::new()),
            clock: 0,
        })))
    });
    c.lock().unwrap_or_else(|e| e.into_inner())
}

/// The pipeline of `p`'s kernel: by the program if it ran before, else by its text.
fn program_pipeline(ctx: &Context, p: &Program) -> Result<wgpu::ComputePipeline> {
    {
        let mut c = cache();
        let now = c.tick();
        if let Some(found) = c.programs.get(p, now) {
            return Ok(found);
        }
    }
    let pipeline = pipeline(ctx, &kernel(p, wide_vectors(ctx))?)?;
    let mut c = cache();
    let now = c.clock;
    c.programs.insert(p.clone(), pipeline.clone(), now);
    Ok(pipeline)
}

/// The pipeline of a kernel ([`kernel`]'s text, the cache key), compiled after the f32
/// library on first use.
fn pipeline(ctx: &Context, key: &str) -> Result<wgpu::ComputePipeline> {
    {
        let mut c = cache();
        let now = c.tick();
        if let Some(found) = c.pipelines.get(key, now) {
            return Ok(found);
        }
    }
    // Compiled outside the lock: other threads' cached kernels need not wait for it.
    let module = ctx.scoped("compiling a fused kernel", || {
        Ok(ctx.device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("fused"),
            source: wgpu::ShaderSource::Wgsl((super::shader::f32_library() + key).into()),
        }))
    })?;
    let p = ctx.scoped("building a fused kernel", || {
        Ok(ctx.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("fused"),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        }))
    })?;
    // A compile may register more driver exit-time destructors (see pipeline.rs).
    crate::lifecycle::driver_step();
    super::timing::name(ctx, &p, || {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut h);
        format!("fused#{:08x}", h.finish() as u32)
    });
    let mut c = cache();
    let now = c.clock;
    c.pipelines.insert(key.to_string(), p.clone(), now);
    Ok(p)
}
