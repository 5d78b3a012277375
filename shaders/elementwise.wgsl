// ---- elementwise.wgsl: unary, binary, comparisons, select, astype ----
// P: EwParams (src/backend/gpu/params.rs).
// OP: a UNARY_* / BINARY_* code; IN_KIND (astype): the source's DTYPE_* code (f16 is
// packed two per word). Both are generated constants (src/primitive/table.rs).
override OP: u32 = 0u;
override IN_KIND: u32 = DTYPE_FLOAT32;

@group(0) @binding(0) var<storage, read> P: EwParams;
@group(0) @binding(1) var<storage, read> X: array<T>;
@group(0) @binding(2) var<storage, read> Y: array<T>;
@group(0) @binding(3) var<storage, read_write> OUT: array<T>;
@group(0) @binding(4) var<storage, read_write> OUT_B: array<u32>;
@group(0) @binding(5) var<storage, read> COND: array<u32>;
@group(0) @binding(6) var<storage, read> SRC: array<u32>;
// Vector views for the `_v4` kernels (inputs read flat): thread j handles elements
// 4j..4j+3 with one 16-byte load per input. Bindings are 16-byte multiples (the pool's
// buckets too), so the lanes past `n` of the last vector stay inside the buffers; they
// compute on whatever is there and land past the array's end, where nothing reads.
@group(0) @binding(7) var<storage, read> X4: array<vec4<T>>;
@group(0) @binding(8) var<storage, read> Y4: array<vec4<T>>;
@group(0) @binding(9) var<storage, read_write> OUT4: array<vec4<T>>;
@group(0) @binding(10) var<storage, read_write> OUT_B4: array<vec4<u32>>;

fn input_index(i: u32, k: u32) -> u32 {
    if (P.flat & (1u << k)) != 0u {
        return i;
    }
    return u32(strided_offset(i, P.rank, P.shape, P.strides[k]));
}

@compute @workgroup_size(256)
fn unary(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P.n { return; }
    OUT[i] = unary_t(OP, X[i]);
}

@compute @workgroup_size(256)
fn unary_pred(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P.n { return; }
    OUT_B[i] = unary_pred_t(OP, X[i]);
}

@compute @workgroup_size(256)
fn binary(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P.n { return; }
    OUT[i] = binary_t(OP, X[input_index(i, 0u)], Y[input_index(i, 1u)]);
}

@compute @workgroup_size(256)
fn compare(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P.n { return; }
    OUT_B[i] = compare_t(OP, X[input_index(i, 0u)], Y[input_index(i, 1u)]);
}

// where(cond, x, y): inputs 0 = cond, 1 = x, 2 = y.
@compute @workgroup_size(256)
fn select_t(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P.n { return; }
    let c = COND[input_index(i, 0u)] != 0u;
    OUT[i] = select(Y[input_index(i, 2u)], X[input_index(i, 1u)], c);
}

@compute @workgroup_size(256)
fn astype(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P.n { return; }
    switch IN_KIND {
        case DTYPE_BOOL: { OUT[i] = t_from_bool(SRC[i] != 0u); }
        case DTYPE_UINT32: { OUT[i] = t_from_u32(SRC[i]); }
        case DTYPE_INT32: { OUT[i] = t_from_i32(bitcast<i32>(SRC[i])); }
        case DTYPE_FLOAT32: { OUT[i] = t_from_f32(bitcast<f32>(SRC[i])); }
        case DTYPE_FLOAT16: {
            let pair = unpack2x16float(SRC[i >> 1u]);
            OUT[i] = t_from_f32(pair[i & 1u]);
        }
        default: { OUT[i] = t_from_u32(POISON_U32); }
    }
}

// ---- vectorised flat kernels: the same per-element functions, four lanes a thread ----
// P.n counts vectors here (ceil(elements / 4)).

@compute @workgroup_size(256)
fn unary_v4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P.n { return; }
    let x = X4[i];
    OUT4[i] = vec4<T>(unary_t(OP, x.x), unary_t(OP, x.y), unary_t(OP, x.z), unary_t(OP, x.w));
}

@compute @workgroup_size(256)
fn unary_pred_v4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P.n { return; }
    let x = X4[i];
    OUT_B4[i] = vec4<u32>(unary_pred_t(OP, x.x), unary_pred_t(OP, x.y), unary_pred_t(OP, x.z), unary_pred_t(OP, x.w));
}

@compute @workgroup_size(256)
fn binary_v4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P.n { return; }
    let a = X4[i];
    let b = Y4[i];
    OUT4[i] = vec4<T>(binary_t(OP, a.x, b.x), binary_t(OP, a.y, b.y), binary_t(OP, a.z, b.z), binary_t(OP, a.w, b.w));
}

@compute @workgroup_size(256)
fn compare_v4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P.n { return; }
    let a = X4[i];
    let b = Y4[i];
    OUT_B4[i] = vec4<u32>(compare_t(OP, a.x, b.x), compare_t(OP, a.y, b.y), compare_t(OP, a.z, b.z),
                          compare_t(OP, a.w, b.w));
}
