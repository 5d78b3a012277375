//! Every GPU shader, in every dtype specialisation (f16 included, whatever this machine's
//! adapter offers), parses and validates with naga and translates to SPIR-V, MSL and HLSL.
//! Pipeline-overridable constants are resolved to their defaults first, as wgpu does.

use lazuli::backend::gpu::{shader_source, shader_variants};

/// `coop`: the cooperative-matrix kernel, which runs only on Vulkan (the device asks for
/// cooperative matrices only where the adapter reports 16x16x16 f16 fragments, which
/// Metal's 8x8 simdgroup matrices and DX12 do not), so it is translated to SPIR-V only.
fn translate(name: &str, src: &str, coop: bool) {
    let module = naga::front::wgsl::parse_str(src).unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(src)));
    let mut validator =
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all());
    let info = validator.validate(&module).unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(src)));
    for ep in &module.entry_points {
        let (module, info) = naga::back::pipeline_constants::process_overrides(
            &module,
            &info,
            Some((ep.stage, ep.name.as_str())),
            &Default::default(),
        )
        .unwrap_or_else(|e| panic!("{name}/{}: overrides: {e}", ep.name));
        let pipeline = naga::back::spv::PipelineOptions { shader_stage: ep.stage, entry_point: ep.name.clone() };
        naga::back::spv::write_vec(&module, &info, &Default::default(), Some(&pipeline))
            .unwrap_or_else(|e| panic!("{name}/{}: spir-v: {e}", ep.name));
        if coop {
            continue;
        }
        let msl_pipeline =
            naga::back::msl::PipelineOptions { entry_point: Some((ep.stage, ep.name.clone())), ..Default::default() };
        naga::back::msl::write_string(&module, &info, &Default::default(), &msl_pipeline)
            .unwrap_or_else(|e| panic!("{name}/{}: msl: {e}", ep.name));
        let hlsl_opts =
            naga::back::hlsl::Options { shader_model: naga::back::hlsl::ShaderModel::V6_2, ..Default::default() };
        let mut out = String::new();
        let hlsl_pipeline = naga::back::hlsl::PipelineOptions { entry_point: Some((ep.stage, ep.name.clone())) };
        naga::back::hlsl::Writer::new(&mut out, &hlsl_opts, &hlsl_pipeline)
            .write(&module, &info, None)
            .unwrap_or_else(|e| panic!("{name}/{}: hlsl: {e}", ep.name));
    }
}

#[test]
fn every_shader_validates_and_translates() {
    let variants = shader_variants();
    assert!(variants.len() >= 20, "expected every family x dtype, got {}", variants.len());
    for (kernel, dtype) in variants {
        let src = shader_source(kernel, dtype).unwrap();
        let coop = matches!(kernel, lazuli::backend::gpu::Kernel::MatmulCoop(_));
        translate(&format!("{}[{dtype}]", kernel.file()), &src, coop);
    }
}

#[test]
fn unsupported_dtypes_are_refused() {
    use lazuli::DType;
    use lazuli::backend::gpu::Kernel;
    for d in [DType::F64, DType::I64, DType::BF16] {
        for k in Kernel::ALL {
            assert!(shader_source(k, d).is_err(), "{k:?} {d}");
        }
    }
    assert!(shader_source(Kernel::MatmulSimple, DType::I32).is_err());
}
