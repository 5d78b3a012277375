//! Batched matmul. The tuned kernel (`shaders/matmul.wgsl`, rewritten for f16 storage by
//! `shader::f16_storage`:
//! workgroup-memory and register tiles, vec4 loads, double buffering) takes every case
//! whose batch dims merge into one strided axis (broadcasting included); other batch
//! layouts use the simple tiled kernel (`shaders/matmul_simple.wgsl`). f16 on a device with
//! cooperative matrices goes to the tensor-core kernel (`matmul_coop`) where it aligns.

use super::buffer::{GpuBuffer, alloc};
use super::context::Context;
use super::context::context;
use super::encoder::dispatch;
use super::matmul_coop;
use super::params::{MatmulParams, SimpleMatmulParams};
use super::pipeline::{check_rank, pipeline};
use super::shader::{Kernel, TileConfig};
use super::{i32_param, u32_param};
use crate::dtype::DType;
use crate::error::Result;
use crate::primitive::{MatmulPlan, ReduceOp};
use crate::stream::Stream;

/// `a @ b` as `plan` lays them out (batch dims broadcast; transposed operands read in
/// place).
pub(crate) fn matmul(s: &Stream, ins: &[&GpuBuffer], plan: &MatmulPlan) -> Result<GpuBuffer> {
    let ctx = context()?;
    let dtype = ins[0].dtype;
    if !matches!(dtype, DType::F32 | DType::F16) {
        return Err(super::unsupported(format!("matmul: {dtype} has no GPU kernel (float32 and float16 only)")));
    }
    let (m, n, k, ta, tb) = (plan.m, plan.n, plan.k, plan.trans_a, plan.trans_b);
    let batches = plan.batches();
    let (bshape, bstrides) = (&plan.batch_shape, &plan.batch_strides);
    if bshape.len() <= 1 {
        let (a_bs, b_bs) = if bshape.len() == 1 { (bstrides[0][0], bstrides[1][0]) } else { (0, 0) };
        return tuned(ctx, s, ins, dtype, plan, (a_bs, b_bs));
    }
    check_rank("matmul", bshape.len())?;
    log::debug!("gpu matmul {m}x{k} @ {k}x{n}, batch shape {bshape:?}: strided kernel (the batch axes do not merge)");
    let mut w = SimpleMatmulParams {
        m: u32_param("matmul", m)?,
        n: u32_param("matmul", n)?,
        k: u32_param("matmul", k)?,
        rank: bshape.len() as u32,
        flags: ta as u32 | (tb as u32) << 1,
        ..Default::default()
    };
    u32_param("matmul", batches * m * n)?;
    for (i, &d) in bshape.iter().enumerate() {
        w.batch_shape[i] = u32_param("matmul", d)?;
        w.a_strides[i] = i32_param("matmul", bstrides[0][i])?;
        w.b_strides[i] = i32_param("matmul", bstrides[1][i])?;
    }
    let p = pipeline(ctx, Kernel::MatmulSimple, dtype, "matmul", &[])?;
    let o = alloc(s, dtype, batches * m * n)?;
    let max = ctx.limits.max_compute_workgroups_per_dimension as usize;
    let (gx, gy) = (n.div_ceil(16), m.div_ceil(16));
    if gx > max || gy > max {
        // Only batch layouts that do not merge into one axis come here; the tuned kernel
        // splits large outputs into blocks.
        return Err(super::unsupported(format!(
            "matmul: output {m}x{n} with batch shape {bshape:?} needs more than {max} workgroups per grid side; \
             make the batch dims contiguous (e.g. with a copy) so the tuned kernel can split it"
        )));
    }
    let mut first = 0usize;
    while first < batches {
        let count = (batches - first).min(max);
        w.first = first as u32;
        dispatch(s, &p, &w, &[(1, ins[0]), (2, ins[1]), (3, &o)], [gx as u32, gy as u32, count as u32])?;
        first += count;
    }
    Ok(o)
}

/// Largest tile that fits the adapter and still gives ~one workgroup per multiprocessor
/// (128, from the H200's 132 SMs); else the smallest that fits.
fn pick(ctx: &Context, m: usize, n: usize, batches: usize) -> Result<TileConfig> {
    let l = &ctx.limits;
    let fits: Vec<TileConfig> = TileConfig::TABLE
        .into_iter()
        .filter(|c| {
            c.threads() <= l.max_compute_invocations_per_workgroup
                && c.threads() <= l.max_compute_workgroup_size_x
                && c.workgroup_bytes() <= l.max_compute_workgroup_storage_size
        })
        .collect();
    let groups = |c: &TileConfig| m.div_ceil(c.bm as usize) * n.div_ceil(c.bn as usize) * batches;
    fits.iter()
        .find(|c| groups(c) >= 128)
        .or(fits.last())
        .copied()
        .ok_or_else(|| super::unsupported("matmul: no tile configuration fits this adapter's workgroup limits"))
}

/// Workgroups a matmul should give before K is split: about one per multiprocessor of an
/// H200 (132 SMs), as in [`pick`]. Measured there (`examples/matmul_bench`, f32, splitting
/// up to 256 workgroups against none): 512^3 6.4 against 4.6 TFLOP/s, 1024^3 24.5 against
/// 23.7, but 2048^3 34.7 against 37.4, so grids of 128 and more are left whole.
const SPLIT_GROUPS: usize = 128;
/// The least K one slab keeps: each slab writes a whole output of partials, which shorter
/// slabs would make large beside their share of the work.
const SPLIT_MIN_K: usize = 256;
/// At most this many splits (the partials are `splits` outputs' worth of memory).
const SPLIT_MAX: usize = 64;

/// How many slabs to split K into for a single matmul whose tiles give `groups`
/// workgroups: doubling while the grid is under [`SPLIT_GROUPS`], each slab keeps at least
/// [`SPLIT_MIN_K`] and K divides into slabs of a multiple of 4 (the vec4 loads' alignment).
/// 1 for batched matmuls, whose batches fill the grid already.
fn k_splits(groups: usize, k: usize, batches: usize) -> usize {
    let mut s = 1;
    if batches != 1 {
        return s;
    }
    while groups * s < SPLIT_GROUPS && s * 2 <= SPLIT_MAX && k.is_multiple_of(8 * s) && k / (2 * s) >= SPLIT_MIN_K {
        s *= 2;
    }
    s
}

/// False when `LAZULI_MATMUL_SPLIT_K=0` (for measuring what splitting gains).
fn split_k_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("LAZULI_MATMUL_SPLIT_K").map_or(true, |v| v != "0"))
}

/// The tuned kernel: batch `b` of A starts at `b * a_bs` (0 broadcasts), likewise B.
fn tuned(
    ctx: &Context,
    s: &Stream,
    ins: &[&GpuBuffer],
    dtype: DType,
    plan: &MatmulPlan,
    (a_bs, b_bs): (isize, isize),
) -> Result<GpuBuffer> {
    let (m, n, k, ta, tb) = (plan.m, plan.n, plan.k, plan.trans_a, plan.trans_b);
    let batches = plan.batches();
    let (a_bs, b_bs) = (a_bs as usize, b_bs as usize); // broadcast strides are >= 0
    let u = |v: usize| u32_param("matmul", v);
    // Row strides of the stored operands: A is K x M when transposed, B is N x K.
    let (lda, ldb) = (plan.lda, plan.ldb);
    let mut w = MatmulParams {
        M: u(m)?,
        N: u(n)?,
        K: u(k)?,
        lda: u(lda)?,
        ldb: u(ldb)?,
        ldc: u(n)?,
        flags: ta as u32 | (tb as u32) << 1,
        a_bstride: u(a_bs)?,
        b_bstride: u(b_bs)?,
        c_bstride: u(m * n)?,
        ..Default::default()
    };
    u(batches * m * n.max(k))?;
    if matmul_coop::eligible(ctx, dtype, n, (lda, ldb), (a_bs, b_bs))
        && let Some(o) = matmul_coop::launch(ctx, s, ins, (m, n), batches, (a_bs, b_bs), w)?
    {
        log::debug!("gpu matmul {m}x{k} @ {k}x{n}, {batches} batches, {dtype}: cooperative-matrix kernel");
        return Ok(o);
    }
    let cfg = pick(ctx, m, n, batches)?;
    // vec4 loads run along the stored rows: K (M if A is transposed), N (K if B is).
    let entry = if [n, lda, ldb].iter().all(|v| v.is_multiple_of(4)) { "matmul_vec4" } else { "matmul_scalar" };
    let p = pipeline(ctx, Kernel::Matmul(cfg), dtype, entry, &[])?;
    let groups = m.div_ceil(cfg.bm as usize) * n.div_ceil(cfg.bn as usize) * batches;
    let splits = if dtype == DType::F32 && split_k_enabled() { k_splits(groups, k, batches) } else { 1 };
    log::debug!(
        "gpu matmul {m}x{k} @ {k}x{n}, {batches} batches, {dtype}: tiled kernel {cfg:?}, {entry}, {splits} K splits"
    );
    if splits > 1 {
        // Split j multiplies K-slab j (its columns of A, its rows of B) as batch j of a
        // batched matmul into partials; a sum over the batch axis gives C.
        let ks = k / splits;
        w.K = u(ks)?;
        w.batch = splits as u32;
        w.a_bstride = u(if ta { ks * lda } else { ks })?;
        w.b_bstride = u(if tb { ks } else { ks * ldb })?;
        w.c_bstride = u(m * n)?;
        let partials = alloc(s, dtype, splits * m * n)?;
        let (gx, gy) = (n.div_ceil(cfg.bn as usize), m.div_ceil(cfg.bm as usize));
        dispatch(s, &p, &w, &[(1, ins[0]), (2, ins[1]), (3, &partials)], [gx as u32, gy as u32, splits as u32])?;
        return super::reduce::reduce(s, ReduceOp::Sum, &partials, &[splits, m * n], &[0]);
    }
    let o = alloc(s, dtype, batches * m * n)?;
    let max = ctx.limits.max_compute_workgroups_per_dimension as usize;
    // An output wider or taller than one dispatch's grid (e.g. [1, 1] @ [1, 2^24]) runs
    // as blocks of at most `max` workgroups per side, each a smaller matmul whose operands
    // start at the block's first row and column. Blocks start at multiples of the tile,
    // so the vec4 alignment of offsets holds.
    let (bn, bm) = (cfg.bn as usize, cfg.bm as usize);
    let (block_n, block_m) = (max * bn, max * bm);
    for r0 in (0..m).step_by(block_m) {
        for c0 in (0..n).step_by(block_n) {
            let (rows, cols) = ((m - r0).min(block_m), (n - c0).min(block_n));
            // Element offsets of the block: A's row r0, B's column c0, C's (r0, c0).
            let a_start = if ta { r0 } else { r0 * lda };
            let b_start = if tb { c0 * ldb } else { c0 };
            let c_start = r0 * n + c0;
            w.M = u(rows)?;
            w.N = u(cols)?;
            let (gx, gy) = (cols.div_ceil(bn), rows.div_ceil(bm));
            // More batches than one dispatch dimension holds: later chunks start at offsets.
            let mut first = 0usize;
            while first < batches {
                let count = (batches - first).min(max);
                w.batch = count as u32;
                w.a_off = u(first * a_bs + a_start)?;
                w.b_off = u(first * b_bs + b_start)?;
                w.c_off = u(first * m * n + c_start)?;
                dispatch(s, &p, &w, &[(1, ins[0]), (2, ins[1]), (3, &o)], [gx as u32, gy as u32, count as u32])?;
                first += count;
            }
        }
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::k_splits;

    #[test]
    fn k_is_split_only_where_the_grid_is_small() {
        // 512^3 on 64x64 tiles: 64 workgroups, two slabs of 256.
        assert_eq!(k_splits(64, 512, 1), 2);
        assert_eq!(k_splits(128, 1024, 1), 1, "a grid of one per SM is left whole");
        assert_eq!(k_splits(64, 1024, 4), 1, "batches fill the grid");
        // A tiny output with a long K: as many slabs as allowed.
        assert_eq!(k_splits(1, 1 << 16, 1), 64);
        // Slabs keep at least 256 of K, and a multiple of 4.
        assert_eq!(k_splits(1, 1024, 1), 4);
        assert_eq!(k_splits(1, 511, 1), 1);
        assert_eq!(k_splits(1, 1028, 1), 1, "slabs of 514 would break the vec4 alignment");
    }
}
