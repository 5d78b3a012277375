//! Every GPU shader, in every dtype specialisation (f16 included, whatever this machine's
//! adapter offers), parses and validates with naga and translates to SPIR-V, MSL and HLSL.
//! Pipeline-overridable constants are resolved to their defaults first, as wgpu does.

use lazuli::backend::gpu::{shader_source, shader_variants};

/// Validates generated WGSL (fused kernels) and translates it to every target.
pub(crate) fn validate_all_targets(name: &str, src: &str) {
    translate(name, src, false);
}

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

/// The body of WGSL function `name` in `src` (up to its closing brace at column 0).
fn body<'a>(src: &'a str, name: &str) -> &'a str {
    let start = src.find(&format!("fn {name}(")).unwrap_or_else(|| panic!("no fn {name}"));
    let len = src[start..].find("\n}\n").unwrap_or_else(|| panic!("fn {name} does not end"));
    &src[start..start + len]
}

fn assert_case(src: &str, func: &str, constant: &str, what: &str) {
    let b = body(src, func);
    let found = b
        .lines()
        .any(|l| l.trim_start().strip_prefix("case ").is_some_and(|c| c.split([',', ':', ' ']).any(|t| t == constant)));
    assert!(found, "{what}: fn {func} has no `case {constant}`");
}

/// Every op code has a `case` in every shader function that dispatches on it, for every
/// dtype class in the op's domain; the `default:` arms only catch codes that cannot come.
#[test]
fn every_op_code_has_a_case_where_it_is_dispatched() {
    use lazuli::DType;
    use lazuli::backend::gpu::Kernel;
    use lazuli::primitive::{ArgReduceOp, BinaryOp, DTypeClass, ReduceOp, ScatterMode, UnaryOp};
    for &dtype in Kernel::Elementwise.dtypes() {
        let class = DTypeClass::of(dtype);
        let float = class == DTypeClass::Float;
        let src = shader_source(Kernel::Elementwise, dtype).unwrap();
        let what = format!("elementwise[{dtype}]");
        for &op in UnaryOp::ALL.iter().filter(|o| o.domain().has(class)) {
            // Predicates of non-bool inputs write bool through `unary_pred_t`.
            let func = match (op.is_predicate() && dtype != DType::Bool, float) {
                (true, _) => "unary_pred_t",
                (false, true) => "unary_f32",
                (false, false) => "unary_t",
            };
            assert_case(&src, func, &op.wgsl_name(), &what);
        }
        for &op in BinaryOp::ALL.iter().filter(|o| o.domain().has(class)) {
            // Ordered comparisons go through common.wgsl's `compare_from`; logic is bool's own.
            let ordered =
                matches!(op, BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge);
            let func = match (op.is_comparison(), ordered, float) {
                (true, true, _) => "compare_from",
                (true, false, _) => "compare_t",
                (false, _, true) => "binary_f32",
                (false, _, false) => "binary_t",
            };
            assert_case(&src, func, &op.wgsl_name(), &what);
        }
        for &op in ReduceOp::ALL {
            assert_case(&src, "acc_op", &op.wgsl_name(), &what);
            assert_case(&src, "acc_identity", &op.wgsl_name(), &what);
        }
        for &op in ArgReduceOp::ALL {
            assert_case(&src, "arg_better", &op.wgsl_name(), &what);
        }
        // astype reads every dtype the GPU stores.
        for &from in Kernel::Elementwise.dtypes() {
            assert_case(&src, "astype", &format!("DTYPE_{}", from.name().to_uppercase()), &what);
        }
        let index = shader_source(Kernel::Index, dtype).unwrap();
        for &mode in ScatterMode::ALL {
            assert_case(&index, "scatter", &mode.wgsl_name(), &format!("index[{dtype}]"));
        }
    }
}

/// No shader spells an op code as a number: every `case` names a generated constant.
#[test]
fn shaders_name_their_op_codes() {
    use lazuli::backend::gpu::Kernel;
    for (kernel, dtype) in shader_variants() {
        if matches!(kernel, Kernel::Matmul(_) | Kernel::MatmulCoop(_)) {
            continue;
        }
        let src = shader_source(kernel, dtype).unwrap();
        for l in src.lines().filter(|l| l.trim_start().starts_with("case ")) {
            let first = l.trim_start()["case ".len()..].chars().next().unwrap_or(' ');
            assert!(!first.is_ascii_digit(), "{}[{dtype}]: numeric case label: {l}", kernel.file());
        }
    }
}
