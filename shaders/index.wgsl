// ---- index.wgsl: gather and scatter along one axis ----
// Indices are I32 or U32, read as u32 words; SIGNED says which. Negative indices count
// from the end. Gather clamps into range; scatter drops out-of-range updates.
override SIGNED: bool = true;
// Scatter mode: a SCATTER_* code.
override MODE: u32 = SCATTER_ASSIGN;

@group(0) @binding(0) var<storage, read> P: IndexParams;
@group(0) @binding(1) var<storage, read> X: array<T>;
@group(0) @binding(2) var<storage, read> IDX: array<u32>;
@group(0) @binding(3) var<storage, read_write> OUT: array<T>;
@group(0) @binding(5) var<storage, read> UPD: array<T>;

// The index as a signed position along an axis of `size`, negatives wrapped once.
fn position(raw: u32, size: u32) -> i32 {
    if SIGNED {
        let v = bitcast<i32>(raw);
        if v < 0 {
            return v + i32(size);
        }
        return v;
    }
    // Unsigned indices beyond i32 are out of range anyway.
    return i32(min(raw, 0x7fffffffu));
}

// out[o, a, in] = X[o, clamp(IDX[o, a, in]), in]; output shaped like the indices.
// P: n, len = idx_len * inner, inner, axis_len = src_len.
@compute @workgroup_size(256)
fn gather(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let j = flat_id(wid, nwg, lid);
    if j >= P.n { return; }
    let inner = P.inner;
    let src_len = P.axis_len;
    let outer = j / P.len;
    let k = u32(clamp(position(IDX[j], src_len), 0, i32(src_len) - 1));
    OUT[j] = X[(outer * src_len + k) * inner + j % inner];
}

// One thread per destination column (outer, inner) walks the updates along the axis in
// order, so repeated indices accumulate without atomics, deterministically, and the
// last assignment wins, as in a sequential loop.
// OUT holds a copy of dst already. P: n = outer * inner, len = upd_len, inner, axis_len = dst_len.
@compute @workgroup_size(256)
fn scatter(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
    let c = flat_id(wid, nwg, lid);
    if c >= P.n { return; }
    let upd_len = P.len;
    let inner = P.inner;
    let dst_len = P.axis_len;
    let o = c / inner;
    let r = c % inner;
    for (var a = 0u; a < upd_len; a++) {
        let u = (o * upd_len + a) * inner + r;
        let k = position(IDX[u], dst_len);
        if k < 0 || k >= i32(dst_len) { continue; }
        let d = (o * dst_len + u32(k)) * inner + r;
        switch MODE {
            case SCATTER_ASSIGN: { OUT[d] = UPD[u]; }
            case SCATTER_ADD: { OUT[d] = scatter_add_t(OUT[d], UPD[u]); }
            default: { OUT[d] = t_from_u32(POISON_U32); }
        }
    }
}
