// ---- matmul_tiles.wgsl: workgroup -> output tile order, shared by matmul.wgsl and
// matmul_coop.wgsl (the host appends it to both) ----
// Tile (row, column) of workgroup `wid`: with `group` > 1, workgroups walk `group` tile-rows
// at a time, column by column, so neighbours reuse the same B columns from L2.
fn tile_of(wid: vec3<u32>, nwg: vec3<u32>, group: u32) -> vec2<u32> {
    if (group <= 1u) {
        return vec2<u32>(wid.y, wid.x);
    }
    let pid = wid.y * nwg.x + wid.x;
    let width = group * nwg.x;
    let first_m = (pid / width) * group;
    let gsz = min(nwg.y - first_m, group);
    let r = pid % width;
    return vec2<u32>(first_m + r % gsz, r / gsz);
}
