//! Compiled compute pipelines, cached for the life of the process.
//!
//! Keyed by kernel family, dtype, entry point and override constants, so each distinct
//! kernel is compiled once. Recompiling per call is also what makes lavapipe crash at
//! exit (shared/facts/teardown.md), besides being slow.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use super::context::Context;
use super::shader::{Kernel, shader_source};
use crate::dtype::DType;
use crate::error::{Error, Result};

type Key = (Kernel, DType, &'static str, Vec<(&'static str, u32)>);

struct Cache {
    modules: HashMap<(Kernel, DType), wgpu::ShaderModule>,
    pipelines: HashMap<Key, wgpu::ComputePipeline>,
}

fn cache() -> &'static Mutex<Cache> {
    // Leaked with the device that owns the pipelines.
    static C: OnceLock<&'static Mutex<Cache>> = OnceLock::new();
    C.get_or_init(|| Box::leak(Box::new(Mutex::new(Cache { modules: HashMap::new(), pipelines: HashMap::new() }))))
}

/// The pipeline for `entry` of `kernel` specialised for `dtype`, with override constants
/// `constants` (name, value).
pub(crate) fn pipeline(
    ctx: &Context,
    kernel: Kernel,
    dtype: DType,
    entry: &'static str,
    constants: &[(&'static str, u32)],
) -> Result<wgpu::ComputePipeline> {
    if dtype == DType::F16 && !ctx.has_f16 {
        return Err(super::unsupported(format!(
            "{}: this adapter lacks SHADER_F16, so float16 cannot run on it; convert with \
             astype(DType::F32) or use the CPU",
            ctx.description
        )));
    }
    let key: Key = (kernel, dtype, entry, constants.to_vec());
    let mut c = cache().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = c.pipelines.get(&key) {
        return Ok(p.clone());
    }
    if let std::collections::hash_map::Entry::Vacant(slot) = c.modules.entry((kernel, dtype)) {
        let src = shader_source(kernel, dtype)?;
        let module = ctx.scoped(&format!("compiling {}[{dtype}]", kernel.file()), || {
            let desc = wgpu::ShaderModuleDescriptor {
                label: Some(kernel.file()),
                source: wgpu::ShaderSource::Wgsl(src.into()),
            };
            Ok(if kernel.is_tuned_matmul() {
                // SAFETY: the tuned matmul guards every global access against M, N, K and
                // its loops have constant or K-derived bounds; wgpu's injected index clamps
                // and loop bounding would only cost speed in its inner loop.
                // The same holds for the coop matmul.
                unsafe { ctx.device.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked()) }
            } else {
                ctx.device.create_shader_module(desc)
            })
        })?;
        slot.insert(module);
    }
    let module = &c.modules[&(kernel, dtype)];
    let consts: Vec<(&str, f64)> = constants.iter().map(|&(k, v)| (k, v as f64)).collect();
    let p = ctx.scoped(&format!("building {}[{dtype}]::{entry}", kernel.file()), || {
        Ok(ctx.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(entry),
            layout: None,
            module,
            entry_point: Some(entry),
            compilation_options: wgpu::PipelineCompilationOptions { constants: &consts, ..Default::default() },
            cache: None,
        }))
    })?;
    super::timing::name(ctx, &p, || {
        let consts: String = constants.iter().map(|(k, v)| format!(" {k}={v}")).collect();
        format!("{}[{dtype}]::{entry}{consts}", kernel.file())
    });
    c.pipelines.insert(key, p.clone());
    // A compile may register more driver exit-time destructors (lavapipe's LLVM does so
    // lazily); registering the exit hook again keeps it ahead of them.
    crate::lifecycle::driver_step();
    Ok(p)
}

/// `Err` naming the rank limit of the strided kernels.
pub(crate) fn check_rank(op: &str, rank: usize) -> Result<()> {
    if rank > MAX_RANK {
        return Err(Error::Unsupported {
            backend: "gpu".into(),
            msg: format!("{op}: rank {rank} (after merging axes) exceeds the GPU kernels' limit of {MAX_RANK}"),
        });
    }
    Ok(())
}

/// Highest rank the strided kernels take (shapes/strides travel in fixed slots).
pub(crate) use super::params::MAX_RANK;
