// ---- random.wgsl: counter-based random bits, Threefry-2x32 with 20 rounds ----
// out[i] = threefry2x32_20((k0, k1), (i, i >> 32)).0 (Random123 / JAX). Flat indices on
// the GPU fit in 32 bits, so the high counter word is 0.
@group(0) @binding(0) var<storage, read> P: RandomParams;
@group(0) @binding(1) var<storage, read> KEY: array<u32>;
@group(0) @binding(4) var<storage, read_write> OUT_B: array<u32>;

fn rotl(x: u32, r: u32) -> u32 {
    return (x << r) | (x >> (32u - r));
}

fn threefry2x32_20(k0: u32, k1: u32, c0: u32, c1: u32) -> u32 {
    var rot = array<u32, 8>(13u, 15u, 26u, 6u, 17u, 29u, 16u, 24u);
    var ks = array<u32, 3>(k0, k1, 0x1BD11BDAu ^ k0 ^ k1);
    var x0 = c0 + ks[0];
    var x1 = c1 + ks[1];
    for (var r = 0u; r < 20u; r++) {
        x0 += x1;
        x1 = rotl(x1, rot[r % 8u]);
        x1 ^= x0;
        if r % 4u == 3u {
            let s = r / 4u + 1u;
            x0 += ks[s % 3u];
            x1 += ks[(s + 1u) % 3u] + s;
        }
    }
    return x0;
}

@compute @workgroup_size(256)
fn random_bits(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P.n { return; }
    OUT_B[i] = threefry2x32_20(KEY[0], KEY[1], i, 0u);
}
