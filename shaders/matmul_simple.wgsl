// ---- matmul_simple.wgsl: a simple, correct tiled matmul (f32 or f16, f32 accumulation) ----
// C[b] = A[b] @ B[b] with A [.., M, K], B [.., K, N] contiguous (or stored transposed,
// [.., K, M] / [.., N, K], per the flags); batch dims broadcast via per-batch offsets
// computed from the output batch index with batch strides (0 = broadcast).
// P: SimpleMatmulParams (src/backend/gpu/params.rs).
// Grid: x over N / 16, y over M / 16, z over batches (at most the per-dimension limit per
// dispatch; larger batches take several dispatches).
const TILE: u32 = 16u;

@group(0) @binding(0) var<storage, read> P: SimpleMatmulParams;
@group(0) @binding(1) var<storage, read> MA: array<T>;
@group(0) @binding(2) var<storage, read> MB: array<T>;
@group(0) @binding(3) var<storage, read_write> OUT: array<T>;

var<workgroup> TA: array<array<f32, 16>, 16>;
var<workgroup> TB: array<array<f32, 16>, 16>;

@compute @workgroup_size(16, 16)
fn matmul(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let m_dim = P.m;
    let n_dim = P.n;
    let k_dim = P.k;
    let trans_a = (P.flags & 1u) != 0u;
    let trans_b = (P.flags & 2u) != 0u;
    let batch = P.first + wid.z;
    let a_base = u32(strided_offset(batch, P.rank, P.batch_shape, P.a_strides));
    let b_base = u32(strided_offset(batch, P.rank, P.batch_shape, P.b_strides));
    let row = wid.y * TILE + lid.y;
    let col = wid.x * TILE + lid.x;
    var acc = 0.0;
    let tiles = (k_dim + TILE - 1u) / TILE;
    for (var t = 0u; t < tiles; t++) {
        let ka = t * TILE + lid.x;
        let kb = t * TILE + lid.y;
        var va = 0.0;
        if row < m_dim && ka < k_dim {
            va = f32(MA[select(a_base + row * k_dim + ka, a_base + ka * m_dim + row, trans_a)]);
        }
        var vb = 0.0;
        if kb < k_dim && col < n_dim {
            vb = f32(MB[select(b_base + kb * n_dim + col, b_base + col * k_dim + kb, trans_b)]);
        }
        TA[lid.y][lid.x] = va;
        TB[lid.y][lid.x] = vb;
        workgroupBarrier();
        for (var k = 0u; k < TILE; k++) {
            acc += TA[lid.y][k] * TB[k][lid.x];
        }
        workgroupBarrier();
    }
    if row < m_dim && col < n_dim {
        OUT[batch * m_dim * n_dim + row * n_dim + col] = to_t(acc);
    }
}
