//! Fast paths for float reductions, arg-reductions and scans whose axes are one
//! consecutive run: the input is read in place as `[outer, len, inner]`, with no copy and
//! no widened buffer. `inner == 1` (the last axes) folds each row in `LANES` interleaved
//! accumulators; `inner > 1` (leading or middle axes) folds whole rows into a row of
//! accumulators. Both are plain loops over contiguous memory that `simd::vectorize`
//! compiles for the CPU's widest vectors.
//!
//! Accuracy is the general path's: every value is widened to f64 and accumulated there,
//! and the result is rounded once to the input dtype. For a sum of `n` f32 values the
//! error is at most half an f32 ulp of the result plus `n * 2^-53 * sum(|x|)` (f64
//! rounding, far below an f32 ulp for any `n` under 2^29). Work splits across threads
//! only along outputs, or into fixed blocks of one long row combined in order, so the
//! result does not depend on the number of threads.

use rayon::prelude::*;

use super::PAR_MIN;
use super::simd::vectorize;
use super::storage::CpuElem;

use crate::primitive::{ReduceOp, ScanOp};

/// Interleaved accumulators per row: enough independent chains to hide the add latency
/// (16 f64 = 4 AVX2 or 2 AVX-512 registers).
const LANES: usize = 16;
/// Running values of [`extremum`]: 32 f32 are two AVX-512 registers, two independent
/// compare-and-select chains. With one (16, [`LANES`]) the loop waited on each compare's
/// latency: the 2-core VM's 1024x1024 argmax over rows went from 17.5 to 19.6-20.6 GB/s on
/// one thread with 32 (37.9-38.0 to 42.7-43.9 on two); 64 ran at 11 (session 23), and
/// still at 12-13 with the NaN test off the chain and a pairwise combine (session 24).
const EXT_LANES: usize = 32;

/// Columns one task accumulates when `inner > 1`: 4 KiB of f64 accumulators, in L1.
const COLS: usize = 512;
/// Rows per task of [`reduce_row_blocks`] ...
const SPLIT_ROWS: usize = 128;
/// ... for rows of at most this many elements (their accumulators stay in L1 and L2).
const SPLIT_MAX_INNER: usize = 8192;
/// Elements [`first_where`] tests at once.
const SEARCH: usize = 64;
/// Elements per task when one long row is split across threads.
const BLOCK: usize = 1 << 14;

/// NaN wins, as in NumPy (the accumulator is `a`).
#[inline(always)]
pub(super) fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || a > b { a } else { b }
}

#[inline(always)]
pub(super) fn nan_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || a < b { a } else { b }
}

/// Calls `$go(identity, combine)` for `op`, each combine a distinct function item so that
/// the loops it reaches are compiled for it (a function pointer would be called per element).
macro_rules! with_monoid {
    ($op:expr, $go:expr) => {
        match $op {
            ReduceOp::Sum => $go(0.0, |a: f64, b: f64| a + b),
            ReduceOp::Prod => $go(1.0, |a: f64, b: f64| a * b),
            ReduceOp::Max => $go(f64::NEG_INFINITY, nan_max),
            ReduceOp::Min => $go(f64::INFINITY, nan_min),
        }
    };
}
// The fused reductions (fused.rs) fold their chunks with the same monoids.
pub(super) use with_monoid;

/// Folds `c` in `LANES` interleaved accumulators, then the lanes and the tail in order.
#[inline(always)]
fn fold_lanes<T: CpuElem>(c: &[T], id: f64, f: impl Fn(f64, f64) -> f64 + Copy) -> f64 {
    let mut acc = [id; LANES];
    let chunks = c.chunks_exact(LANES);
    let tail = chunks.remainder();
    for ch in chunks {
        for (a, &x) in acc.iter_mut().zip(ch) {
            *a = f(*a, x.to_f64());
        }
    }
    tail.iter().fold(acc.into_iter().fold(id, f), |a, &x| f(a, x.to_f64()))
}

/// One contiguous row folded; a long one in fixed blocks on threads, combined in order.
fn fold_row<T: CpuElem, F: Fn(f64, f64) -> f64 + Copy + Sync + Send>(c: &[T], id: f64, f: F) -> f64 {
    if c.len() >= PAR_MIN {
        let parts: Vec<f64> = c.par_chunks(BLOCK).map(|b| fold_vectorized(b, id, f)).collect();
        parts.into_iter().fold(id, f)
    } else {
        fold_vectorized(c, id, f)
    }
}

/// [`fold_lanes`] compiled for the CPU's widest vectors.
#[inline(always)]
pub(super) fn fold_vectorized<T: CpuElem, F: Fn(f64, f64) -> f64 + Copy>(c: &[T], id: f64, f: F) -> f64 {
    vectorize(
        #[inline(always)]
        || fold_lanes(c, id, f),
    )
}

/// Runs `task(o, j0, out_block)` for every outer index and block of `COLS` columns of an
/// `[outer, inner]` output, on threads when the input (`work` elements) is large.
fn per_column_block<U: Send>(out: &mut [U], inner: usize, work: usize, task: impl Fn(usize, usize, &mut [U]) + Sync) {
    let row = |(o, r): (usize, &mut [U])| {
        for (b, blk) in r.chunks_mut(COLS).enumerate() {
            task(o, b * COLS, blk);
        }
    };
    if work >= PAR_MIN {
        out.par_chunks_mut(inner).enumerate().for_each(|(o, r)| {
            r.par_chunks_mut(COLS).enumerate().for_each(|(b, blk)| task(o, b * COLS, blk));
        });
    } else {
        out.chunks_mut(inner).enumerate().for_each(row);
    }
}

/// `op` over the middle axis of `v` seen as `[outer, len, inner]` (`len > 0`), in f64.
pub(super) fn reduce<T: CpuElem>(op: ReduceOp, v: &[T], outer: usize, len: usize, inner: usize) -> Vec<f64> {
    with_monoid!(op, |id, f| reduce_with(v, outer, len, inner, id, f))
}

fn reduce_with<T: CpuElem, F>(v: &[T], outer: usize, len: usize, inner: usize, id: f64, f: F) -> Vec<f64>
where
    F: Fn(f64, f64) -> f64 + Copy + Sync + Send,
{
    if inner == 1 {
        return if outer >= 2 && v.len() >= PAR_MIN {
            v.par_chunks(len).map(|c| fold_vectorized(c, id, f)).collect()
        } else {
            v.chunks(len).map(|c| fold_row(c, id, f)).collect()
        };
    }
    if v.len() >= PAR_MIN && inner <= SPLIT_MAX_INNER && len >= 2 * SPLIT_ROWS {
        return reduce_row_blocks(v, outer, len, inner, id, f);
    }
    let mut out = vec![id; outer * inner];
    per_column_block(&mut out, inner, v.len(), |o, j0, acc| {
        let slab = &v[o * len * inner..(o + 1) * len * inner];
        vectorize(
            #[inline(always)]
            || {
                for row in slab.chunks_exact(inner) {
                    for (a, &x) in acc.iter_mut().zip(&row[j0..]) {
                        *a = f(*a, x.to_f64());
                    }
                }
            },
        )
    });
    out
}

/// [`reduce_with`] over a leading or middle axis of a large input, as tasks of
/// [`SPLIT_ROWS`] whole rows: each streams its rows once into its own row of accumulators
/// (in L1), and the partials are combined in order, so the result depends on the shape
/// only, not on the thread count. (Tasks of column blocks read each row in pieces, a
/// page apart: a sum over axis 0 of 1024x1024 moved 17 GB/s on 2 cores, NumPy 24.)
fn reduce_row_blocks<T: CpuElem, F>(v: &[T], outer: usize, len: usize, inner: usize, id: f64, f: F) -> Vec<f64>
where
    F: Fn(f64, f64) -> f64 + Copy + Sync + Send,
{
    let blocks = len.div_ceil(SPLIT_ROWS);
    let parts: Vec<Vec<f64>> = (0..outer * blocks)
        .into_par_iter()
        .map(|t| {
            let (o, b) = (t / blocks, t % blocks);
            let rows = b * SPLIT_ROWS..((b + 1) * SPLIT_ROWS).min(len);
            let slab = &v[(o * len + rows.start) * inner..(o * len + rows.end) * inner];
            let mut acc = vec![id; inner];
            vectorize(
                #[inline(always)]
                || {
                    for row in slab.chunks_exact(inner) {
                        for (a, &x) in acc.iter_mut().zip(row) {
                            *a = f(*a, x.to_f64());
                        }
                    }
                },
            );
            acc
        })
        .collect();
    let mut out = vec![id; outer * inner];
    for (t, p) in parts.iter().enumerate() {
        let o = t / blocks;
        for (d, &x) in out[o * inner..(o + 1) * inner].iter_mut().zip(p) {
            *d = f(*d, x);
        }
    }
    out
}

/// First index of the extremum along the middle axis (`len > 0`); a NaN counts as the
/// extremum, ties go to the first.
pub(super) fn arg_reduce<T: CpuElem>(max: bool, v: &[T], outer: usize, len: usize, inner: usize) -> Vec<u32> {
    if max {
        arg_reduce_with(v, outer, len, inner, |x: T, b: T| x > b, |x, b| x > b)
    } else {
        arg_reduce_with(v, outer, len, inner, |x: T, b: T| x < b, |x, b| x < b)
    }
}

/// `better_native(x, b)` (rows, in `T`) and `better(x, b)` (columns, in f64) say `x`
/// beats the best so far.
fn arg_reduce_with<T: CpuElem, N, B>(
    v: &[T],
    outer: usize,
    len: usize,
    inner: usize,
    better_native: N,
    better: B,
) -> Vec<u32>
where
    N: Fn(T, T) -> bool + Copy + Sync + Send,
    B: Fn(f64, f64) -> bool + Copy + Sync + Send,
{
    if inner == 1 {
        // The extremum by the vectorised fold, then the first element equal to it.
        let row = |c: &[T]| {
            let best = extremum(c, better_native);
            // `x != x` only for NaN.
            #[allow(clippy::eq_op)]
            let hit = if best != best { first_where(c, |x| x != x) } else { first_where(c, |x| x == best) };
            hit.unwrap_or(0) as u32
        };
        return if v.len() >= PAR_MIN {
            v.par_chunks(len).map(row).collect()
        } else {
            v.chunks(len).map(row).collect()
        };
    }
    let mut out = vec![0u32; outer * inner];
    per_column_block(&mut out, inner, v.len(), |o, j0, idx| {
        let slab = &v[o * len * inner..(o + 1) * len * inner];
        let mut best: Vec<f64> = slab[j0..j0 + idx.len()].iter().map(|x| x.to_f64()).collect();
        vectorize(
            #[inline(always)]
            || {
                for (l, row) in slab.chunks_exact(inner).enumerate().skip(1) {
                    for ((b, i), &x) in best.iter_mut().zip(idx.iter_mut()).zip(&row[j0..]) {
                        let x = x.to_f64();
                        if !b.is_nan() && (x.is_nan() || better(x, *b)) {
                            *b = x;
                            *i = l as u32;
                        }
                    }
                }
            },
        )
    });
    out
}

/// The extremum of a row in its own type (`better(a, b)`: `a` beats `b`), a NaN winning:
/// [`EXT_LANES`] running values, then the lanes and the tail. Comparisons need no conversion
/// to f64, so the loop vectorises as a compare and a select per element.
fn extremum<T: CpuElem>(c: &[T], better: impl Fn(T, T) -> bool + Copy) -> T {
    // `x` replaces the running `a` if it is NaN or better, so a NaN `a` is replaced only
    // by another NaN. The NaN test is on the new value, off the loop-carried chain.
    #[allow(clippy::eq_op)]
    let pick = move |a: T, x: T| if (x != x) | better(x, a) { x } else { a };
    vectorize(
        #[inline(always)]
        || {
            let mut acc = [c[0]; EXT_LANES];
            let chunks = c.chunks_exact(EXT_LANES);
            let tail = chunks.remainder();
            for ch in chunks {
                for (a, &x) in acc.iter_mut().zip(ch) {
                    *a = pick(*a, x);
                }
            }
            // Halving the lanes pairwise keeps the combine in vector registers.
            let mut w = EXT_LANES;
            while w > 1 {
                w /= 2;
                let (lo, hi) = acc.split_at_mut(w);
                for (a, &b) in lo.iter_mut().zip(&hi[..w]) {
                    *a = pick(*a, b);
                }
            }
            tail.iter().fold(acc[0], |a, &x| pick(a, x))
        },
    )
}

/// Index of the first element of `c` where `hit` holds. Blocks of [`SEARCH`] are tested
/// whole (a branch-free fold the compiler vectorises), and only the block that hits is
/// searched element by element: a plain `position` stops to branch on every element.
fn first_where<T: CpuElem>(c: &[T], hit: impl Fn(T) -> bool + Copy) -> Option<usize> {
    vectorize(
        #[inline(always)]
        || {
            c.chunks(SEARCH).enumerate().find_map(|(k, blk)| {
                let any = blk.iter().fold(false, |a, &x| a | hit(x));
                if any { blk.iter().position(|&x| hit(x)).map(|p| k * SEARCH + p) } else { None }
            })
        },
    )
}

/// Inclusive scan along the middle axis (`len > 0`), accumulated in f64 and rounded to
/// `T` at each step (as the general path does).
pub(super) fn scan<T: CpuElem>(op: ScanOp, v: &[T], outer: usize, len: usize, inner: usize, reverse: bool) -> Vec<T> {
    match op {
        ScanOp::Sum => scan_with(v, outer, len, inner, reverse, |a: f64, b: f64| a + b),
        ScanOp::Prod => scan_with(v, outer, len, inner, reverse, |a: f64, b: f64| a * b),
        ScanOp::Max => scan_with(v, outer, len, inner, reverse, nan_max),
        ScanOp::Min => scan_with(v, outer, len, inner, reverse, nan_min),
    }
}

fn scan_with<T: CpuElem, F>(v: &[T], outer: usize, len: usize, inner: usize, reverse: bool, f: F) -> Vec<T>
where
    F: Fn(f64, f64) -> f64 + Copy + Sync + Send,
{
    let mut out = super::pool::filled(v.len(), T::default());
    let slab = len * inner;
    let task = |(o, dst): (usize, &mut [T])| {
        let src = &v[o * slab..(o + 1) * slab];
        if inner == 1 {
            // One serial chain: nothing to vectorise, so no dispatch per element.
            let mut acc = None;
            let mut step = |(x, y): (&T, &mut T)| {
                let a = acc.map_or(x.to_f64(), |a| f(a, x.to_f64()));
                acc = Some(a);
                *y = T::from_f64(a);
            };
            if reverse {
                src.iter().rev().zip(dst.iter_mut().rev()).for_each(&mut step);
            } else {
                src.iter().zip(dst.iter_mut()).for_each(&mut step);
            }
            return;
        }
        let mut acc: Vec<f64> = vec![0.0; inner];
        for step in 0..len {
            let l = if reverse { len - 1 - step } else { step };
            let (x, y) = (&src[l * inner..(l + 1) * inner], &mut dst[l * inner..(l + 1) * inner]);
            if step == 0 {
                for ((a, &x), y) in acc.iter_mut().zip(x).zip(y) {
                    *a = x.to_f64();
                    *y = x;
                }
                continue;
            }
            vectorize(
                #[inline(always)]
                || {
                    for ((a, &x), y) in acc.iter_mut().zip(x).zip(y.iter_mut()) {
                        *a = f(*a, x.to_f64());
                        *y = T::from_f64(*a);
                    }
                },
            )
        }
    };
    if v.len() >= PAR_MIN && outer >= 2 {
        out.par_chunks_mut(slab).enumerate().for_each(task);
    } else {
        out.chunks_mut(slab).enumerate().for_each(task);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The old general path's definitions, element by element, as the reference.
    fn reference(op: ReduceOp, v: &[f32], outer: usize, len: usize, inner: usize) -> Vec<f64> {
        let at = |k: usize, l: usize| v[(k / inner * len + l) * inner + k % inner] as f64;
        (0..outer * inner)
            .map(|k| with_monoid!(op, |id, f: fn(f64, f64) -> f64| (0..len).fold(id, |a, l| f(a, at(k, l)))))
            .collect()
    }

    fn data(n: usize) -> Vec<f32> {
        (0..n).map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 64.0).collect()
    }

    #[test]
    fn reductions_match_the_plain_fold_on_every_layout() {
        // Small and large (row blocks, a partial last block; rows too wide for them).
        let layouts = [
            (1, 1, 1),
            (3, 17, 1),
            (1, 70_000, 1),
            (5, 9, 3),
            (2, 300, 700),
            (1, 40_000, 2),
            (3, 257, 64),
            (1, 256, 8200),
        ];
        for (outer, len, inner) in layouts {
            let v = data(outer * len * inner);
            for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min] {
                let got = reduce(op, &v, outer, len, inner);
                let want = reference(op, &v, outer, len, inner);
                for (g, w) in got.iter().zip(&want) {
                    assert!((g - w).abs() <= 1e-9 * w.abs().max(1.0), "{op:?} {outer}x{len}x{inner}: {g} vs {w}");
                }
            }
        }
    }

    #[test]
    fn nan_wins_and_ties_go_first() {
        let v = [1.0f32, 3.0, f32::NAN, 3.0, -2.0, 3.0, 0.0, 0.0, 0.0];
        assert!(reduce(ReduceOp::Max, &v, 1, 9, 1)[0].is_nan());
        assert_eq!(arg_reduce(true, &v, 1, 9, 1), vec![2]);
        assert_eq!(arg_reduce(true, &v[3..], 2, 3, 1), vec![0, 0]);
        assert_eq!(arg_reduce(false, &v[3..], 2, 3, 1), vec![1, 0]);
        // Columns of [[1, 3, nan], [3, -2, 3], [0, 0, 0]].
        assert_eq!(arg_reduce(true, &v, 1, 3, 3), vec![1, 0, 0]);
        assert_eq!(arg_reduce(false, &v, 1, 3, 3), vec![2, 1, 0]);
    }

    #[test]
    fn long_rows_find_the_first_extremum() {
        // The first index of the max / min, NaN first, by a plain scan.
        fn naive(c: &[f32], max: bool) -> u32 {
            if let Some(i) = c.iter().position(|x| x.is_nan()) {
                return i as u32;
            }
            let mut i = 0;
            for (j, &x) in c.iter().enumerate() {
                if (max && x > c[i]) || (!max && x < c[i]) {
                    i = j;
                }
            }
            i as u32
        }
        for len in [1usize, 15, 16, 17, 31, 64, 100, 257] {
            for seed in 0..20u64 {
                // Few distinct values, so ties are common; sometimes a NaN, a -0.0.
                let mut c: Vec<f32> = (0..len as u64).map(|i| ((i * 7 + seed * 13) % 5) as f32 - 2.0).collect();
                if seed % 3 == 0 {
                    c[(seed as usize * 11) % len] = f32::NAN;
                }
                if seed % 4 == 1 {
                    c[(seed as usize * 5) % len] = -0.0;
                }
                for max in [true, false] {
                    assert_eq!(arg_reduce(max, &c, 1, len, 1), vec![naive(&c, max)], "len {len} seed {seed} max {max}");
                }
            }
        }
    }

    #[test]
    fn scans_run_either_way_along_any_axis() {
        let v = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        assert_eq!(scan(ScanOp::Sum, &v, 2, 3, 1, false), vec![1.0, 3.0, 6.0, 4.0, 9.0, 15.0]);
        assert_eq!(scan(ScanOp::Sum, &v, 2, 3, 1, true), vec![6.0, 5.0, 3.0, 15.0, 11.0, 6.0]);
        assert_eq!(scan(ScanOp::Prod, &v, 1, 2, 3, false), vec![1.0, 2.0, 3.0, 4.0, 10.0, 18.0]);
        assert_eq!(scan(ScanOp::Max, &v, 1, 3, 2, true), vec![5.0, 6.0, 5.0, 6.0, 5.0, 6.0]);
    }

    #[test]
    fn f32_sums_stay_within_the_stated_bound() {
        // 2^22 values in [0.01, 1.01) whose plain f32 running sum is off by ~24 (NumPy's
        // cumsum, measured), ~190 times the bound.
        let v: Vec<f32> = (0..1usize << 22).map(|i| ((i * 7919 % 1000) as f64 / 997.0 + 0.01) as f32).collect();
        let exact: f64 = v.iter().map(|&x| x as f64).sum();
        let got = reduce(ReduceOp::Sum, &v, 1, v.len(), 1)[0] as f32;
        let bound = 0.5 * exact.abs() * f32::EPSILON as f64;
        assert!((got as f64 - exact).abs() <= bound, "{got} vs {exact}");
        let naive: f32 = v.iter().sum();
        assert!((naive as f64 - exact).abs() > 4.0 * bound, "the data must make a plain f32 sum drift");
    }
}
