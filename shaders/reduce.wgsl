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
