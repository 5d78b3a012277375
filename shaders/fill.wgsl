// ---- fill.wgsl: constant fill and arange ----
@group(0) @binding(3) var<storage, read_write> OUT: array<T>;
@group(0) @binding(4) var<storage, read_write> OUT_W: array<u32>;

// P: [0] words, [1] the 32-bit pattern (the value in device layout; two copies for f16).
@compute @workgroup_size(256)
fn fill(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P[0] { return; }
    OUT_W[i] = P[1];
}

// Integral start and step, every value representable: exact 32-bit wrapping arithmetic.
// (Other aranges are computed on the host: they need f64 rounding, and double-f32 tricks
// do not survive drivers that reassociate float math.)
// P: [0] n, [1] start, [2] step (i32 bits).
@compute @workgroup_size(256)
fn arange(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P[0] { return; }
    OUT[i] = t_from_i32(bitcast<i32>(P[1]) + bitcast<i32>(i) * bitcast<i32>(P[2]));
}
