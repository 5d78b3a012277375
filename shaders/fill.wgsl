// ---- fill.wgsl: constant fill and arange ----
@group(0) @binding(3) var<storage, read_write> OUT: array<T>;
@group(0) @binding(4) var<storage, read_write> OUT_W: array<u32>;

// P: [0] words, [1] the 32-bit pattern (the value in device layout; two copies for f16).
@compute @workgroup_size(256)
fn fill(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P[0] { return; }
    OUT_W[i] = P[1];
}

// Double-f32 ("double-float") arithmetic, so arange matches the host's f64 computation
// to ~48 bits before the final rounding. Dekker's split: no fma needed.
fn two_sum(a: f32, b: f32) -> vec2<f32> {
    let s = a + b;
    let bb = s - a;
    return vec2<f32>(s, (a - (s - bb)) + (b - bb));
}

fn split(a: f32) -> vec2<f32> {
    let c = 4097.0 * a;
    let hi = c - (c - a);
    return vec2<f32>(hi, a - hi);
}

fn two_prod(a: f32, b: f32) -> vec2<f32> {
    let p = a * b;
    let x = split(a);
    let y = split(b);
    return vec2<f32>(p, ((x.x * y.x - p) + x.x * y.y + x.y * y.x) + x.y * y.y);
}

fn df_mul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    var p = two_prod(a.x, b.x);
    p.y += a.x * b.y + a.y * b.x;
    return two_sum(p.x, p.y);
}

fn df_add(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    var s = two_sum(a.x, b.x);
    s.y += a.y + b.y;
    return two_sum(s.x, s.y);
}

// P: [0] n, [1] [2] start (hi, lo f32 bits), [3] [4] step (hi, lo), [5] integer mode,
//    [6] [7] start and step as i32 (integer mode: exact wrapping arithmetic).
@compute @workgroup_size(256)
fn arange(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P[0] { return; }
    if P[5] != 0u {
        OUT[i] = t_from_i32(bitcast<i32>(P[6]) + bitcast<i32>(i) * bitcast<i32>(P[7]));
        return;
    }
    let start = vec2<f32>(bitcast<f32>(P[1]), bitcast<f32>(P[2]));
    let step = vec2<f32>(bitcast<f32>(P[3]), bitcast<f32>(P[4]));
    // i = hi + lo, both exact in f32.
    let fi = vec2<f32>(f32(i & 0xffff0000u), f32(i & 0xffffu));
    let fi_n = two_sum(fi.x, fi.y);
    let v = df_add(start, df_mul(fi_n, step));
    if T_IS_FLOAT || T_IS_BOOL {
        OUT[i] = t_from_f32(v.x + v.y);
        return;
    }
    // Truncation toward zero of hi + lo, deciding exact-integer cases by lo's sign.
    var t = trunc(v.x);
    if t == v.x {
        if v.x > 0.0 && v.y < 0.0 { t -= 1.0; }
        if v.x < 0.0 && v.y > 0.0 { t += 1.0; }
        if v.x == 0.0 { t = 0.0; }
    }
    OUT[i] = t_from_f32(t);
}
