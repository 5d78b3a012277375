// ---- reduce.wgsl: reductions, arg-reductions, scans ----
// The input is viewed as [outer, len, inner]; the op runs along `len`.
// ROP: a REDUCE_* code (scans combine with one too), or an ARG_* code for arg-reductions.
// P: ReduceParams (src/backend/gpu/params.rs): n lines or rows, len, inner; reduce_rows
// also segment and segments, scan also reverse.
override ROP: u32 = REDUCE_SUM;

@group(0) @binding(0) var<storage, read> P: ReduceParams;
@group(0) @binding(1) var<storage, read> X: array<T>;
@group(0) @binding(3) var<storage, read_write> OUT: array<T>;
@group(0) @binding(4) var<storage, read_write> OUT_B: array<u32>;

@group(0) @binding(5) var<storage, read_write> OUT_A: array<A>;
// reduce_rows_v4: the input as vectors (rows and segments are multiples of 4 elements).
@group(0) @binding(7) var<storage, read> X4: array<vec4<T>>;

// The `_acc` entry points store the accumulator (f32 for f16) instead of rounding to T:
// partial results of a multi-pass reduction round once, at the end (the host casts), so
// f16 partial sums and products cannot leave f16's range or lose precision.

// One thread per output (outer, inner); neighbours read neighbouring columns.
fn line_acc(i: u32) -> A {
    let len = P.len;
    let inner = P.inner;
    let base = (i / inner) * len * inner + i % inner;
    var acc = acc_identity(ROP);
    for (var a = 0u; a < len; a++) {
        acc = acc_op(ROP, acc, to_acc(X[base + a * inner]));
    }
    return acc;
}

@compute @workgroup_size(256)
fn reduce_lines(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P.n { return; }
    OUT[i] = from_acc(line_acc(i));
}

@compute @workgroup_size(256)
fn reduce_lines_acc(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                    @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P.n { return; }
    OUT_A[i] = line_acc(i);
}

var<workgroup> PART: array<A, 256>;

// One workgroup per segment of a contiguous row (inner == 1), for long rows; output
// [rows, segments] (the caller reduces the segments in a second pass when there are
// several). Segments keep each thread's loop short. Every thread of the group must call
// this (barriers); the result is in thread 0's return value.
fn row_acc(row: u32, lid: u32) -> A {
    // Every thread of the group reaches the barriers, so bound the row check, not the loop.
    let live = row < P.n;
    let len = P.len;
    var acc = acc_identity(ROP);
    if live {
        let r = row / P.segments;
        let start = (row % P.segments) * P.segment;
        let end = min(len, start + P.segment);
        let base = r * len;
        for (var a = start + lid; a < end; a += WG) {
            acc = acc_op(ROP, acc, to_acc(X[base + a]));
        }
    }
    PART[lid] = acc;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if lid < s {
            PART[lid] = acc_op(ROP, PART[lid], PART[lid + s]);
        }
        workgroupBarrier();
    }
    return PART[0];
}

// As row_acc, reading 16 bytes a load into four lane accumulators (combined at the
// end), for rows whose length is a multiple of 4 (the segment length is too).
fn row_acc_v4(row: u32, lid: u32) -> A {
    let live = row < P.n;
    var acc = acc_identity(ROP);
    if live {
        let len4 = P.len >> 2u;
        let r = row / P.segments;
        let start = (row % P.segments) * (P.segment >> 2u);
        let end = min(len4, start + (P.segment >> 2u));
        let base = r * len4;
        var l0 = acc_identity(ROP);
        var l1 = acc_identity(ROP);
        var l2 = acc_identity(ROP);
        var l3 = acc_identity(ROP);
        for (var a = start + lid; a < end; a += WG) {
            let v = X4[base + a];
            l0 = acc_op(ROP, l0, to_acc(v.x));
            l1 = acc_op(ROP, l1, to_acc(v.y));
            l2 = acc_op(ROP, l2, to_acc(v.z));
            l3 = acc_op(ROP, l3, to_acc(v.w));
        }
        acc = acc_op(ROP, acc_op(ROP, l0, l1), acc_op(ROP, l2, l3));
    }
    PART[lid] = acc;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if lid < s {
            PART[lid] = acc_op(ROP, PART[lid], PART[lid + s]);
        }
        workgroupBarrier();
    }
    return PART[0];
}

@compute @workgroup_size(256)
fn reduce_rows_v4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
    let row = wid.y * nwg.x + wid.x;
    let acc = row_acc_v4(row, lid);
    if row < P.n && lid == 0u {
        OUT[row] = from_acc(acc);
    }
}

@compute @workgroup_size(256)
fn reduce_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let row = wid.y * nwg.x + wid.x;
    let acc = row_acc(row, lid);
    if row < P.n && lid == 0u {
        OUT[row] = from_acc(acc);
    }
}

@compute @workgroup_size(256)
fn reduce_rows_acc(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_index) lid: u32) {
    let row = wid.y * nwg.x + wid.x;
    let acc = row_acc(row, lid);
    if row < P.n && lid == 0u {
        OUT_A[row] = acc;
    }
}

// Index of the extremum along len, one thread per (outer, inner). Ties keep the first.
@compute @workgroup_size(256)
fn argreduce(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P.n { return; }
    let len = P.len;
    let inner = P.inner;
    let base = (i / inner) * len * inner + i % inner;
    var best = X[base];
    var idx = 0u;
    for (var a = 1u; a < len; a++) {
        let v = X[base + a * inner];
        if arg_better(ROP, v, best) {
            best = v;
            idx = a;
        }
    }
    OUT_B[i] = idx;
}

// Inclusive scan, one thread per line (outer, inner); the running value is kept in A
// (f32 for f16) and rounded to T only when stored.
@compute @workgroup_size(256)
fn scan(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = flat_id(wid, nwg, lid);
    if i >= P.n { return; }
    let len = P.len;
    let inner = P.inner;
    let base = (i / inner) * len * inner + i % inner;
    var acc = acc_identity(ROP);
    for (var a = 0u; a < len; a++) {
        var k = a;
        if P.reverse != 0u { k = len - 1u - a; }
        let at = base + k * inner;
        if a == 0u {
            acc = to_acc(X[at]);
        } else {
            acc = acc_op(ROP, acc, to_acc(X[at]));
        }
        OUT[at] = from_acc(acc);
    }
}

// ---- parallel along the line: one workgroup per contiguous row (inner == 1) ----

var<workgroup> ARG_V: array<T, 256>;
var<workgroup> ARG_I: array<u32, 256>;

// Index of the extremum of row `wid` (P.n rows of P.len): each thread walks the row
// 256 apart keeping its first best, then a tree keeps the better value, or on a tie (or
// two NaNs) the lower index, so the first extremum of the row wins, as in `argreduce`.
@compute @workgroup_size(256)
fn argreduce_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
    let row = wid.y * nwg.x + wid.x;
    let live = row < P.n;
    let len = P.len;
    var idx = 0xffffffffu;
    var best = X[0];
    if live && lid < len {
        let base = row * len;
        best = X[base + lid];
        idx = lid;
        for (var a = lid + WG; a < len; a += WG) {
            let v = X[base + a];
            if arg_better(ROP, v, best) {
                best = v;
                idx = a;
            }
        }
    }
    ARG_V[lid] = best;
    ARG_I[lid] = idx;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if lid < s {
            let iv = ARG_I[lid];
            let jv = ARG_I[lid + s];
            let a = ARG_V[lid];
            let b = ARG_V[lid + s];
            // An empty slot (index all ones) never wins; else better, or tie and lower.
            var take = false;
            if jv != 0xffffffffu {
                if iv == 0xffffffffu {
                    take = true;
                } else if arg_better(ROP, b, a) {
                    take = true;
                } else if !arg_better(ROP, a, b) && jv < iv {
                    take = true;
                }
            }
            if take {
                ARG_V[lid] = b;
                ARG_I[lid] = jv;
            }
        }
        workgroupBarrier();
    }
    if live && lid == 0u {
        OUT_B[row] = ARG_I[0];
    }
}

var<workgroup> SCAN: array<A, 256>;

// Inclusive scan of row `wid` (P.n rows of P.len, from the end when P.reverse), in
// chunks of 1024: each thread combines 4 consecutive elements, a Hillis-Steele scan over
// the 256 thread totals gives each thread its prefix, and the chunk's total carries into
// the next chunk. Accumulates in A and rounds to T at the store, like `scan`; the first
// element of a row is stored as it is (no identity is combined into real values, so a
// leading -0.0 stays -0.0).
@compute @workgroup_size(256)
fn scan_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let row = wid.y * nwg.x + wid.x;
    let live = row < P.n;
    let len = P.len;
    let base = row * len;
    var carry = acc_identity(ROP);
    let chunks = (len + 4u * WG - 1u) / (4u * WG);
    for (var c = 0u; c < chunks; c++) {
        // A thread's valid elements are a prefix of its four (they are consecutive).
        var v: array<A, 4>;
        var run = acc_identity(ROP);
        for (var k = 0u; k < 4u; k++) {
            let a = c * 4u * WG + lid * 4u + k;
            if live && a < len {
                var at = a;
                if P.reverse != 0u { at = len - 1u - a; }
                let x = to_acc(X[base + at]);
                if k == 0u { run = x; } else { run = acc_op(ROP, run, x); }
            }
            v[k] = run;
        }
        SCAN[lid] = run;
        workgroupBarrier();
        for (var s = 1u; s < WG; s = s << 1u) {
            var add = run;
            let take = lid >= s;
            if take { add = SCAN[lid - s]; }
            workgroupBarrier();
            if take { SCAN[lid] = acc_op(ROP, add, SCAN[lid]); }
            workgroupBarrier();
        }
        // What comes before this thread's elements: the carry of earlier chunks and the
        // totals of the earlier threads of this chunk (either may be absent).
        var has = c > 0u;
        var prefix = carry;
        if lid > 0u {
            if has { prefix = acc_op(ROP, carry, SCAN[lid - 1u]); } else { prefix = SCAN[lid - 1u]; }
            has = true;
        }
        for (var k = 0u; k < 4u; k++) {
            let a = c * 4u * WG + lid * 4u + k;
            if live && a < len {
                var at = a;
                if P.reverse != 0u { at = len - 1u - a; }
                var r = v[k];
                if has { r = acc_op(ROP, prefix, v[k]); }
                OUT[base + at] = from_acc(r);
            }
        }
        // Every chunk but the last is full, so its total holds no identity.
        if c == 0u { carry = SCAN[WG - 1u]; } else { carry = acc_op(ROP, carry, SCAN[WG - 1u]); }
        workgroupBarrier();
    }
}
