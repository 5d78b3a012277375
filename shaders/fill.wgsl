// ---- fill.wgsl: constant fill and arange ----
@group(0) @binding(0) var<storage, read> P: FillParams;
@group(0) @binding(3) var<storage, read_write> OUT: array<T>;
@group(0) @binding(4) var<storage, read_write> OUT_W: array<u32>;

// P: n words of `word` (the value in device layout; two copies for f16).
@compute @workgroup_size(256)
fn fill(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P.n { return; }
    OUT_W[i] = P.word;
}

// Integral start and step, every value representable: exact 32-bit wrapping arithmetic.
// (Other aranges are computed on the host: they need f64 rounding, and double-f32 tricks
// do not survive drivers that reassociate float math.)
// P: n, start, step.
@compute @workgroup_size(256)
fn arange(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P.n { return; }
    OUT[i] = t_from_i32(P.start + bitcast<i32>(i) * P.step);
}
