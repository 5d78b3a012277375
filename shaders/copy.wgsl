// ---- copy.wgsl: strided copy (as_strided) and concatenation ----
@group(0) @binding(1) var<storage, read> X: array<T>;
@group(0) @binding(3) var<storage, read_write> OUT: array<T>;

// out[i] = X[offset + sum(idx(i) * strides)].
// P: [0] n, [1] rank, [2] unused, [3] offset, [4..12] output shape, [12..20] strides (i32 bits).
@compute @workgroup_size(256)
fn strided(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P[0] { return; }
    OUT[i] = X[u32(i32(P[3]) + strided_offset(i, P[1], 4u, 12u))];
}

// Copies one contiguous input, viewed as [outer, len, inner], into the output viewed as
// [outer, out_len, inner] at position `at` along the middle axis.
// P: [0] n (input elements), [1] len * inner, [2] inner, [3] out_len * inner, [4] at * inner.
@compute @workgroup_size(256)
fn concat_into(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let j = flat_id(wid, nwg, lid);
    if j >= P[0] { return; }
    let outer = j / P[1];
    let rem = j % P[1];
    OUT[outer * P[3] + P[4] + rem] = X[j];
}
