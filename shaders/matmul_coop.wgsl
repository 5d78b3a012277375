// lazuli f16 matmul on tensor cores: C[b] = A[b] @ B[b] through WGSL cooperative matrices
// (wgpu's EXPERIMENTAL_COOPERATIVE_MATRIX, `enable wgpu_cooperative_matrix;`). f16 storage,
// 16x16x16 f16 fragments, f32 accumulators, one rounding to f16 at the store.
//
// This file is a TEMPLATE: the host (src/backend/gpu/matmul_coop.rs) replaces the lines
// between `// @config-begin` / `// @config-end` with one tile configuration's constants and
// each `// @generate <part>` line with code unrolled for that configuration, and appends
// matmul_tiles.wgsl (`tile_of`). Unrolled, with
// one variable per accumulator fragment, it ran 3.6-4.4x faster on an H200 than the same
// kernel written with loops over `array<coop_mat16x16<..>>` and single-buffered (kernel
// alone, GPU timestamps): 146 / 123 / 127 vs 33 / 33.5 / 35 TFLOP/s at n = 2048 / 4096 / 8192.
//
// BINDINGS (group 0), as matmul.wgsl:
//   0: P  var<storage, read>        Params (16 x u32, same fields as matmul.wgsl; flags ignored)
//   1: gA var<storage, read>        array<vec4<f16>>   M x K, row stride lda
//   2: gB var<storage, read>        array<vec4<f16>>   K x N, row stride ldb
//   3: gC var<storage, read_write>  array<vec4<f16>>   M x N, row stride ldc
//   (named gA/gB/gC: A, B and C are the cooperative-matrix role names)
// TRANSPOSES are compiled in (the host generates A-transposed and B-transposed variants:
//   A stored K x M, B stored N x K); the flags word is ignored.
// CONSTRAINTS (the host checks them): N, lda, ldb, ldc, offsets and batch strides multiples
//   of 4 (vec4 loads along the stored rows, vec4 stores); any M, N, K otherwise (edges are
//   zero-filled on load and bounds-checked on store); subgroups of exactly 32 invocations
//   (a subgroup is `tid / 32`, and the epilogue gives each lane 8 of a fragment's 256 values).
// DISPATCH: (ceil(N / BN), ceil(M / BM), batch), NT = 32 * WGM * WGN invocations per workgroup.
//
// Work split: WGM x WGN subgroups, each owning FM x FN fragments (an FM*16 x FN*16 block of
// the BM x BN tile). Per BK-deep slab, every thread loads its share of the A and B tiles into
// registers, stores them to workgroup memory, and the subgroups multiply-accumulate from it.
// STAGES = 2 double-buffers workgroup memory (the next slab's loads overlap this slab's math,
// one barrier per slab); STAGES = 1 still prefetches the next slab into registers.

enable f16;
enable wgpu_cooperative_matrix;

// @config-begin
const WGM: u32 = 4u;
const WGN: u32 = 2u;
const FM: u32 = 2u;
const FN: u32 = 4u;
const BK: u32 = 32u;
const GROUP_M: u32 = 8u;
const STAGES: u32 = 2u;
const SA: u32 = 40u;              // row stride of the stored A tile in halves (its row, padded
const SB: u32 = 136u;             // by 8 against bank conflicts); likewise B
const TA: u32 = 5120u;            // halves of one stage of the A tile
const TB: u32 = 4352u;
// @config-end

const BM: u32 = WGM * FM * 16u;
const BN: u32 = WGN * FN * 16u;

// P: MatmulParams, generated from src/backend/gpu/params.rs and appended by the host.

@group(0) @binding(0) var<storage, read> P: MatmulParams;
@group(0) @binding(1) var<storage, read> gA: array<vec4<f16>>;
@group(0) @binding(2) var<storage, read> gB: array<vec4<f16>>;
@group(0) @binding(3) var<storage, read_write> gC: array<vec4<f16>>;

var<workgroup> As: array<f16, STAGES * TA>;
var<workgroup> Bs: array<f16, STAGES * TB>;
// Each subgroup stages one f32 fragment here on the way out (coop stores cannot convert).
var<workgroup> Cs: array<f32, WGM * WGN * 256u>;

@compute @workgroup_size(32u * WGM * WGN)
fn matmul_coop(@builtin(local_invocation_index) tid: u32,
               @builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    // Tile order: GROUP_M tile-rows at a time (tile_of, matmul_tiles.wgsl).
    let tile = tile_of(wid, nwg, GROUP_M);
    let m0 = tile.x * BM;
    let n0 = tile.y * BN;
    // Parameters are read once into registers: P is a storage buffer, which the compiler
    // must assume gC may alias, so uses left in the loops would reload it.
    let M = P.M;
    let N = P.N;
    let K = P.K;
    let lda = P.lda;
    let ldb = P.ldb;
    let ldc = P.ldc;
    let abase = P.a_off + wid.z * P.a_bstride;
    let bbase = P.b_off + wid.z * P.b_bstride;
    let cbase = P.c_off + wid.z * P.c_bstride;
    let sg = tid / 32u;
    let lane = tid % 32u;
    let sm = sg / WGN;
    let sn = sg % WGN;
    let nk = (K + BK - 1u) / BK;
    // @generate declarations
    // @generate main-loop
    // @generate epilogue
}
