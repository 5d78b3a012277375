// ---- copy.wgsl: strided copy (as_strided) and concatenation ----
@group(0) @binding(0) var<storage, read> P: CopyParams;
@group(0) @binding(1) var<storage, read> X: array<T>;
@group(0) @binding(3) var<storage, read_write> OUT: array<T>;

// out[i] = X[offset + sum(idx(i) * strides)].
// P: n, rank, offset, shape, strides.
@compute @workgroup_size(256)
fn strided(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P.n { return; }
    OUT[i] = X[u32(P.offset + strided_offset(i, P.rank, P.shape, P.strides))];
}

// Copies one contiguous input, viewed as [outer, len, inner], into the output viewed as
// [outer, out_len, inner] at position `at` along the middle axis.
// P: n (input elements), block = len * inner, out_block = out_len * inner, start = at * inner.
@compute @workgroup_size(256)
fn concat_into(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let j = flat_id(wid, nwg, lid);
    if j >= P.n { return; }
    let outer = j / P.block;
    let rem = j % P.block;
    OUT[outer * P.out_block + P.start + rem] = X[j];
}
