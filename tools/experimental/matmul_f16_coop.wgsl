enable f16;
enable wgpu_cooperative_matrix;
// lazuli f16 matmul on tensor cores through cooperative matrices (EXPERIMENTAL_COOPERATIVE_MATRIX,
// SHADER_F16; device created with experimental_features = unsafe { ExperimentalFeatures::enabled() }).
// C[b] = A[b] @ B[b], f16 storage, f32 accumulation in 16x16x16 coop tiles, f16 output.
// Same bindings and Params struct as matmul.wgsl (buffers are array<vec4<f16>>; binding sizes must be
// multiples of 8 bytes). Entry point: matmul_coop. Restrictions: flags must be 0 (no transposes),
// N % 4 == 0, K % 4 == 0, lda/ldb/ldc, offsets and batch strides % 4 == 0 (any M, N, K otherwise;
// edges are zero-filled / bounds-checked). Assumes subgroup size 32 (NVIDIA).
// Dispatch: (ceil(N / BN), ceil(M / BM), batch), BM = WGM*FM*16, BN = WGN*FN*16, NT = 32*WGM*WGN.

// @tunables-begin
const WGM: u32 = 4u;
const WGN: u32 = 2u;
const FM: u32 = 2u;
const FN: u32 = 4u;
const BK: u32 = 32u;
const GROUP_M: u32 = 8u;
// @tunables-end

const SG: u32 = 32u;
const BM: u32 = WGM * FM * 16u;
const BN: u32 = WGN * FN * 16u;
const NT: u32 = SG * WGM * WGN;
const SA: u32 = BK + 8u;         // A tile row stride in halves (padding against bank conflicts)
const SB: u32 = BN + 8u;         // B tile row stride in halves
const BK4: u32 = BK / 4u;
const BN4: u32 = BN / 4u;
const VA: u32 = BM * BK4;
const VB: u32 = BK * BN4;
const LA: u32 = (VA + NT - 1u) / NT;
const LB: u32 = (VB + NT - 1u) / NT;

struct Params {
    M: u32, N: u32, K: u32, batch: u32,
    lda: u32, ldb: u32, ldc: u32, flags: u32,
    a_off: u32, b_off: u32, c_off: u32, _pad0: u32,
    a_bstride: u32, b_bstride: u32, c_bstride: u32, _pad1: u32,
}

@group(0) @binding(0) var<storage, read> gA: array<vec4<f16>>;
@group(0) @binding(1) var<storage, read> gB: array<vec4<f16>>;
@group(0) @binding(2) var<storage, read_write> gC: array<vec4<f16>>;
@group(0) @binding(3) var<uniform> P: Params;

var<workgroup> As: array<f16, BM * SA>;
var<workgroup> Bs: array<f16, BK * SB>;
var<workgroup> Cs: array<f32, WGM * WGN * 256u>;

@compute @workgroup_size(NT)
fn matmul_coop(@builtin(local_invocation_index) tid: u32,
               @builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    var pm = wid.y;
    var pn = wid.x;
    if (GROUP_M > 1u) {
        let pid = wid.y * nwg.x + wid.x;
        let width = GROUP_M * nwg.x;
        let first_m = (pid / width) * GROUP_M;
        let gsz = min(nwg.y - first_m, GROUP_M);
        let r = pid % width;
        pm = first_m + r % gsz;
        pn = r / gsz;
    }
    let m0 = pm * BM;
    let n0 = pn * BN;
    let M = P.M; let N = P.N; let K = P.K;
    let abase = P.a_off + wid.z * P.a_bstride;
    let bbase = P.b_off + wid.z * P.b_bstride;
    let cbase = P.c_off + wid.z * P.c_bstride;
    let sg = tid / SG;
    let lane = tid % SG;
    let sm = sg / WGN;
    let sn = sg % WGN;

    var acc: array<coop_mat16x16<f32, C>, FM * FN>;
    let nk = (K + BK - 1u) / BK;
    for (var t = 0u; t < nk; t++) {
        let k0 = t * BK;
        for (var j = 0u; j < LA; j++) {
            let v = tid + j * NT;
            if (v < VA) {
                let row = v / BK4;
                let kq = v % BK4;
                let gm = m0 + row;
                let gk = k0 + kq * 4u;
                var x = vec4<f16>(0.0h);
                if (gm < M && gk < K) { x = gA[(abase + gm * P.lda + gk) >> 2u]; }
                let s = row * SA + kq * 4u;
                As[s] = x.x; As[s + 1u] = x.y; As[s + 2u] = x.z; As[s + 3u] = x.w;
            }
        }
        for (var j = 0u; j < LB; j++) {
            let v = tid + j * NT;
            if (v < VB) {
                let kr = v / BN4;
                let nq = v % BN4;
                let gk = k0 + kr;
                let gn = n0 + nq * 4u;
                var x = vec4<f16>(0.0h);
                if (gk < K && gn < N) { x = gB[(bbase + gk * P.ldb + gn) >> 2u]; }
                let s = kr * SB + nq * 4u;
                Bs[s] = x.x; Bs[s + 1u] = x.y; Bs[s + 2u] = x.z; Bs[s + 3u] = x.w;
            }
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk += 16u) {
            var a: array<coop_mat16x16<f16, A>, FM>;
            for (var i = 0u; i < FM; i++) {
                a[i] = coopLoadT<coop_mat16x16<f16, A>>(&As[(sm * FM * 16u + i * 16u) * SA + kk], SA);
            }
            for (var j = 0u; j < FN; j++) {
                let b = coopLoadT<coop_mat16x16<f16, B>>(&Bs[kk * SB + sn * FN * 16u + j * 16u], SB);
                for (var i = 0u; i < FM; i++) {
                    acc[i * FN + j] = coopMultiplyAdd(a[i], b, acc[i * FN + j]);
                }
            }
        }
        workgroupBarrier();
    }

    // Epilogue: each subgroup stages one 16x16 f32 fragment at a time, lanes convert and store.
    for (var i = 0u; i < FM; i++) {
        for (var j = 0u; j < FN; j++) {
            coopStoreT(acc[i * FN + j], &Cs[sg * 256u], 16u);
            workgroupBarrier();
            for (var q = 0u; q < 2u; q++) {
                let e = lane * 8u + q * 4u;
                let row = m0 + sm * FM * 16u + i * 16u + e / 16u;
                let col = n0 + sn * FN * 16u + j * 16u + e % 16u;
                if (row < M && col < N) {
                    let s = sg * 256u + e;
                    gC[(cbase + row * P.ldc + col) >> 2u] = vec4<f16>(vec4<f32>(Cs[s], Cs[s + 1u], Cs[s + 2u], Cs[s + 3u]));
                }
            }
            workgroupBarrier();
        }
    }
}
