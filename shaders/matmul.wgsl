// lazuli f32 matmul: C[b] = op(A[b]) @ op(B[b])   (row-major, f32 storage, f32 accumulation)
//
// BINDINGS (group 0)
//   binding 0: P  var<storage, read>        Params (64 bytes, 16 x u32, field order below)
//   binding 1: A  var<storage, read>        array<vec4<f32>>
//   binding 2: B  var<storage, read>        array<vec4<f32>>
//   binding 3: C  var<storage, read_write>  array<vec4<f32>>
//   (Params at binding 0 in a storage buffer, like every other lazuli kernel.)
//   All three buffers are declared as vec4 arrays, so every BINDING SIZE MUST BE A MULTIPLE OF
//   16 BYTES (round allocations up). Element indices/offsets below are in f32 elements; the
//   scalar entry point reads/writes single f32 components, so it has no alignment needs.
//
// PARAMS (all u32, all in ELEMENTS, not bytes)
//   0 M, 1 N, 2 K, 3 batch        C is M x N, op(A) is M x K, op(B) is K x N
//   4 lda, 5 ldb, 6 ldc           row strides: A is M x lda (K x lda if trans_a), B is K x ldb
//                                 (N x ldb if trans_b), C is M x ldc. Contiguous: lda = K (M if
//                                 trans_a), ldb = N (K if trans_b), ldc = N.
//   7 flags                       bit 0 = trans_a (A stored K x M), bit 1 = trans_b (B stored N x K)
//   8 a_off, 9 b_off, 10 c_off    base element offset of batch 0 in each buffer
//   11 _pad0
//   12 a_bstride, 13 b_bstride, 14 c_bstride   element stride between batches (0 = broadcast)
//   15 _pad1
//   Element (m,k) of batch b of A lives at a_off + b*a_bstride + m*lda + k (k*lda + m if trans_a).
//
// ENTRY POINTS (same module, same bind group layout)
//   matmul_vec4    fast path. Use ONLY IF: N % 4 == 0, ldc/c_off/c_bstride % 4 == 0, and
//                  (trans_a ? M : K) % 4 == 0, lda/a_off/a_bstride % 4 == 0, and
//                  (trans_b ? K : N) % 4 == 0, ldb/b_off/b_bstride % 4 == 0.
//   matmul_scalar  general path: any M, N, K >= 0, any strides/offsets (bounds-checked).
//   Both handle M, N, K that are not multiples of the tile (edges are bounds-checked).
//
// DISPATCH: dispatch_workgroups(ceil(N / BN), ceil(M / BM), batch); workgroup size = (BM/TM)*(BN/TN).
//
// TUNABLES: the six `const` lines between the markers below. The host may replace each whole line
// (match on the prefix "const BM: u32 =" etc.) before compiling. Constraints:
//   TM % 4 == 0, TN % 4 == 0, BK % 4 == 0, BM % TM == 0, BN % TN == 0,
//   threads NT = (BM/TM)*(BN/TN) <= max_compute_invocations_per_workgroup (and <= 1024),
//   workgroup memory = 2 (double buffer) * BK * (BM + BN) * 4 bytes <= max_compute_workgroup_storage_size.
//   Defaults 128x128x8, 8x8, GROUP_M 8: 256 threads, 16 KiB (good all-round; fits lavapipe 32 KiB).
//   Measured on H200 (wgpu 30 Vulkan, f32, n^3): 128x256x8 TM=TN=8 (512 thr, 24 KiB) 41.1/41.5/41.7
//   TFLOP/s at n=2048/4096/8192 (10 at 1024); 64x128x16 TM=4 TN=8 (256 thr, 24 KiB) 30.0 TFLOP/s at
//   n=1024; default 128x128x8 17.7/38.8/39.3/39.7. Host rule: take the largest tile that still gives
//   >= ~128 workgroups (the H200 has 132 SMs), else 64x128x16/4x8, else 64x64x8/4x4 (8 KiB, any device).
//   GROUP_M > 1 reorders workgroups in groups of GROUP_M tile-rows for L2 reuse (0 or 1 = off;
//   measured gain ~2% at 4096).
// Compile with device.create_shader_module_trusted(.., ShaderRuntimeChecks::unchecked()):
// the kernel does its own bounds checks and never loops unboundedly; wgpu's injected checks
// (array index clamping, loop bounding) can only cost speed (checked vs unchecked not measured).

// @tunables-begin
const BM: u32 = 128u;
const BN: u32 = 128u;
const BK: u32 = 8u;
const TM: u32 = 8u;
const TN: u32 = 8u;
const GROUP_M: u32 = 8u;
// @tunables-end

const WM: u32 = BM / TM;         // threads along M
const WN: u32 = BN / TN;         // threads along N
const NT: u32 = WM * WN;         // threads per workgroup
const RM: u32 = TM / 4u;         // vec4 groups per thread along M
const RN: u32 = TN / 4u;         // vec4 groups per thread along N
const BM4: u32 = BM / 4u;
const BN4: u32 = BN / 4u;
const BK4: u32 = BK / 4u;
const VA: u32 = BM * BK / 4u;    // vec4 slots in one A tile
const VB: u32 = BN * BK / 4u;
const LA: u32 = (VA + NT - 1u) / NT;   // vec4 global loads of A per thread per stage
const LB: u32 = (VB + NT - 1u) / NT;   // vec4 global loads of B per thread per stage
const EA: bool = LA * NT == VA;  // exact split: no per-thread guard needed
const EB: bool = LB * NT == VB;
const SA: u32 = BK * BM4;        // vec4 slots of one A stage in workgroup memory
const SB: u32 = BK * BN4;

// P: MatmulParams, generated from src/backend/gpu/params.rs and appended by the host.

@group(0) @binding(1) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> B: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> C: array<vec4<f32>>;
@group(0) @binding(0) var<storage, read> P: MatmulParams;

// As[stage][k][m] (m packed by 4), Bs[stage][k][n] (n packed by 4)
var<workgroup> As: array<vec4<f32>, 2u * SA>;
var<workgroup> Bs: array<vec4<f32>, 2u * SB>;

var<private> ra: array<vec4<f32>, LA>;
var<private> rb: array<vec4<f32>, LB>;

fn lda_s(i: u32) -> f32 { return A[i >> 2u][i & 3u]; }
fn ldb_s(i: u32) -> f32 { return B[i >> 2u][i & 3u]; }

// Global -> registers for the K-slab starting at k0.
fn load_a(tid: u32, m0: u32, k0: u32, abase: u32, vec: bool) {
    let M = P.M; let K = P.K; let lda = P.lda;
    if ((P.flags & 1u) == 0u) {
        // A stored M x K: vec4 along k. v -> (row = v / BK4, kq = v % BK4)
        for (var j = 0u; j < LA; j++) {
            let v = tid + j * NT;
            if (!EA && v >= VA) { break; }
            let gm = m0 + v / BK4;
            let gk = k0 + (v % BK4) * 4u;
            let e = abase + gm * lda + gk;
            if (vec) {
                var x = vec4<f32>(0.0);
                if (gm < M && gk < K) { x = A[e >> 2u]; }
                ra[j] = x;
            } else {
                var x = vec4<f32>(0.0);
                if (gm < M) {
                    if (gk < K) { x.x = lda_s(e); }
                    if (gk + 1u < K) { x.y = lda_s(e + 1u); }
                    if (gk + 2u < K) { x.z = lda_s(e + 2u); }
                    if (gk + 3u < K) { x.w = lda_s(e + 3u); }
                }
                ra[j] = x;
            }
        }
    } else {
        // A stored K x M: vec4 along m. v -> (kr = v / BM4, mq = v % BM4)
        for (var j = 0u; j < LA; j++) {
            let v = tid + j * NT;
            if (!EA && v >= VA) { break; }
            let gk = k0 + v / BM4;
            let gm = m0 + (v % BM4) * 4u;
            let e = abase + gk * lda + gm;
            if (vec) {
                var x = vec4<f32>(0.0);
                if (gk < K && gm < M) { x = A[e >> 2u]; }
                ra[j] = x;
            } else {
                var x = vec4<f32>(0.0);
                if (gk < K) {
                    if (gm < M) { x.x = lda_s(e); }
                    if (gm + 1u < M) { x.y = lda_s(e + 1u); }
                    if (gm + 2u < M) { x.z = lda_s(e + 2u); }
                    if (gm + 3u < M) { x.w = lda_s(e + 3u); }
                }
                ra[j] = x;
            }
        }
    }
}

fn load_b(tid: u32, n0: u32, k0: u32, bbase: u32, vec: bool) {
    let N = P.N; let K = P.K; let ldb = P.ldb;
    if ((P.flags & 2u) == 0u) {
        // B stored K x N: vec4 along n. v -> (kr = v / BN4, nq = v % BN4)
        for (var j = 0u; j < LB; j++) {
            let v = tid + j * NT;
            if (!EB && v >= VB) { break; }
            let gk = k0 + v / BN4;
            let gn = n0 + (v % BN4) * 4u;
            let e = bbase + gk * ldb + gn;
            if (vec) {
                var x = vec4<f32>(0.0);
                if (gk < K && gn < N) { x = B[e >> 2u]; }
                rb[j] = x;
            } else {
                var x = vec4<f32>(0.0);
                if (gk < K) {
                    if (gn < N) { x.x = ldb_s(e); }
                    if (gn + 1u < N) { x.y = ldb_s(e + 1u); }
                    if (gn + 2u < N) { x.z = ldb_s(e + 2u); }
                    if (gn + 3u < N) { x.w = ldb_s(e + 3u); }
                }
                rb[j] = x;
            }
        }
    } else {
        // B stored N x K: vec4 along k. v -> (nr = v / BK4, kq = v % BK4)
        for (var j = 0u; j < LB; j++) {
            let v = tid + j * NT;
            if (!EB && v >= VB) { break; }
            let gn = n0 + v / BK4;
            let gk = k0 + (v % BK4) * 4u;
            let e = bbase + gn * ldb + gk;
            if (vec) {
                var x = vec4<f32>(0.0);
                if (gn < N && gk < K) { x = B[e >> 2u]; }
                rb[j] = x;
            } else {
                var x = vec4<f32>(0.0);
                if (gn < N) {
                    if (gk < K) { x.x = ldb_s(e); }
                    if (gk + 1u < K) { x.y = ldb_s(e + 1u); }
                    if (gk + 2u < K) { x.z = ldb_s(e + 2u); }
                    if (gk + 3u < K) { x.w = ldb_s(e + 3u); }
                }
                rb[j] = x;
            }
        }
    }
}

// Registers -> workgroup memory stage `st`.
fn store_a(tid: u32, st: u32) {
    let base = st * SA;
    if ((P.flags & 1u) == 0u) {
        for (var j = 0u; j < LA; j++) {
            let v = tid + j * NT;
            if (!EA && v >= VA) { break; }
            let row = v / BK4;
            let kk = (v % BK4) * 4u;
            let s = base + kk * BM4 + (row >> 2u);
            let c = row & 3u;
            As[s][c] = ra[j].x;
            As[s + BM4][c] = ra[j].y;
            As[s + 2u * BM4][c] = ra[j].z;
            As[s + 3u * BM4][c] = ra[j].w;
        }
    } else {
        for (var j = 0u; j < LA; j++) {
            let v = tid + j * NT;
            if (!EA && v >= VA) { break; }
            As[base + (v / BM4) * BM4 + (v % BM4)] = ra[j];
        }
    }
}

fn store_b(tid: u32, st: u32) {
    let base = st * SB;
    if ((P.flags & 2u) == 0u) {
        for (var j = 0u; j < LB; j++) {
            let v = tid + j * NT;
            if (!EB && v >= VB) { break; }
            Bs[base + (v / BN4) * BN4 + (v % BN4)] = rb[j];
        }
    } else {
        for (var j = 0u; j < LB; j++) {
            let v = tid + j * NT;
            if (!EB && v >= VB) { break; }
            let col = v / BK4;
            let kk = (v % BK4) * 4u;
            let s = base + kk * BN4 + (col >> 2u);
            let c = col & 3u;
            Bs[s][c] = rb[j].x;
            Bs[s + BN4][c] = rb[j].y;
            Bs[s + 2u * BN4][c] = rb[j].z;
            Bs[s + 3u * BN4][c] = rb[j].w;
        }
    }
}

fn mm(tid: u32, wid: vec3<u32>, nwg: vec3<u32>, vec: bool) {
    // Tile order: GROUP_M tile-rows at a time (tile_of, matmul_tiles.wgsl).
    let tile = tile_of(wid, nwg, GROUP_M);
    let m0 = tile.x * BM;
    let n0 = tile.y * BN;
    let b = wid.z;
    let abase = P.a_off + b * P.a_bstride;
    let bbase = P.b_off + b * P.b_bstride;
    let cbase = P.c_off + b * P.c_bstride;
    let tx = tid % WN;
    let ty = tid / WN;

    var acc: array<vec4<f32>, RM * 4u * RN>;
    for (var i = 0u; i < RM * 4u * RN; i++) { acc[i] = vec4<f32>(0.0); }

    let nk = (P.K + BK - 1u) / BK;
    if (nk > 0u) {
        load_a(tid, m0, 0u, abase, vec);
        load_b(tid, n0, 0u, bbase, vec);
        store_a(tid, 0u);
        store_b(tid, 0u);
    }
    workgroupBarrier();

    for (var t = 0u; t < nk; t++) {
        let st = t & 1u;
        let more = t + 1u < nk;
        if (more) {
            load_a(tid, m0, (t + 1u) * BK, abase, vec);
            load_b(tid, n0, (t + 1u) * BK, bbase, vec);
        }
        let sa = st * SA + ty;
        let sb = st * SB + tx;
        for (var k = 0u; k < BK; k++) {
            var a: array<vec4<f32>, RM>;
            var bv: array<vec4<f32>, RN>;
            for (var g = 0u; g < RM; g++) { a[g] = As[sa + k * BM4 + g * WM]; }
            for (var h = 0u; h < RN; h++) { bv[h] = Bs[sb + k * BN4 + h * WN]; }
            for (var g = 0u; g < RM; g++) {
                for (var i = 0u; i < 4u; i++) {
                    let av = vec4<f32>(a[g][i]);
                    for (var h = 0u; h < RN; h++) {
                        let ix = (g * 4u + i) * RN + h;
                        acc[ix] = fma(av, bv[h], acc[ix]);
                    }
                }
            }
        }
        if (more) {
            store_a(tid, st ^ 1u);
            store_b(tid, st ^ 1u);
        }
        workgroupBarrier();
    }

    // Write back: row = m0 + g*4*WM + 4*ty + i, cols = n0 + h*4*WN + 4*tx + (0..3)
    let M = P.M; let N = P.N; let ldc = P.ldc;
    for (var g = 0u; g < RM; g++) {
        for (var i = 0u; i < 4u; i++) {
            let row = m0 + g * 4u * WM + ty * 4u + i;
            if (row < M) {
                for (var h = 0u; h < RN; h++) {
                    let col = n0 + h * 4u * WN + tx * 4u;
                    let v = acc[(g * 4u + i) * RN + h];
                    let e = cbase + row * ldc + col;
                    if (vec) {
                        if (col < N) { C[e >> 2u] = v; }
                    } else {
                        if (col < N) { C[e >> 2u][e & 3u] = v.x; }
                        if (col + 1u < N) { C[(e + 1u) >> 2u][(e + 1u) & 3u] = v.y; }
                        if (col + 2u < N) { C[(e + 2u) >> 2u][(e + 2u) & 3u] = v.z; }
                        if (col + 3u < N) { C[(e + 3u) >> 2u][(e + 3u) & 3u] = v.w; }
                    }
                }
            }
        }
    }
}

@compute @workgroup_size(NT)
fn matmul_vec4(@builtin(local_invocation_index) tid: u32,
               @builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    mm(tid, wid, nwg, true);
}

@compute @workgroup_size(NT)
fn matmul_scalar(@builtin(local_invocation_index) tid: u32,
                 @builtin(workgroup_id) wid: vec3<u32>,
                 @builtin(num_workgroups) nwg: vec3<u32>) {
    mm(tid, wid, nwg, false);
}
