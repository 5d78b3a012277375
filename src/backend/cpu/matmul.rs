//! Matmul: floats through the `gemm` crate (blocked, SIMD, threaded), integers by a
//! plain loop in wrapping i64.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rayon::prelude::*;

use super::storage::{CpuData, CpuElem};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::primitive::MatmulPlan;

/// (column, row) strides in elements of an `r x c` operand stored row-major, or stored
/// transposed (`c x r`, row-major) when `trans`.
fn strides(r: usize, c: usize, trans: bool) -> (isize, isize) {
    if trans { (r as isize, 1) } else { (1, c as isize) }
}

/// An `m x n` block of a row-major C whose rows are `ldc` apart, from A's and B's
/// (column, row) strides: C is written, never read.
///
/// # Safety
/// Every element the strides and sizes name must lie within the allocations behind the
/// pointers, and no other thread may touch the block of C while this runs.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_block<T: 'static + Copy + num_traits::Zero + num_traits::One>(
    c: *mut T,
    ldc: usize,
    a: *const T,
    (a_cs, a_rs): (isize, isize),
    b: *const T,
    (b_cs, b_rs): (isize, isize),
    (m, k, n): (usize, usize, usize),
) {
    // SAFETY: as the caller promises.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c,
            1,
            ldc as isize,
            false,
            a,
            a_cs,
            a_rs,
            b,
            b_cs,
            b_rs,
            T::zero(),
            T::one(),
            false,
            false,
            false,
            gemm::Parallelism::None,
        )
    }
}

/// The grid (rows, columns) of `tiles` blocks with the least packing: each block packs
/// its rows of A and its columns of B, so the sum of a block's sides is kept small.
fn grid(tiles: usize, m: usize, n: usize) -> (usize, usize) {
    (1..=tiles)
        .filter(|r| tiles.is_multiple_of(*r))
        .map(|r| (r, tiles / r))
        .min_by_key(|&(r, c)| m.div_ceil(r) + n.div_ceil(c))
        .unwrap_or((1, 1))
}

/// Blocks of C per thread in a threaded product: more blocks than threads even out the
/// threads (a block is claimed by whichever thread is free). On a 16-core host four a
/// thread gave 1475-1555 GFLOP/s at 2048³ where one gave 967-1092, and more from 512³ to
/// 4096³; on the 2-core machine the two are within noise (BENCHMARKS.md, session 20).
const TILES_PER_THREAD: usize = 4;

/// Products below this many multiply-adds (m·n·k) run on the calling thread alone.
const MIN_THREADED: usize = 1 << 20;

/// The least multiply-adds in one block of a threaded product: a block is one gemm call,
/// which packs its rows of A and columns of B (session 22, BENCHMARKS.md).
const MIN_BLOCK: usize = 1 << 18;

/// Blocks for a product of `work` multiply-adds on `threads` threads (1: unthreaded).
fn blocks(work: usize, threads: usize) -> usize {
    if threads < 2 || work < MIN_THREADED {
        return 1;
    }
    (work / MIN_BLOCK).clamp(1, threads * TILES_PER_THREAD)
}

/// C = A @ B for row-major C (m x n); A (m x k) and B (k x n) row-major, or stored
/// transposed when `ta` / `tb` (gemm takes any strides, so nothing is copied).
///
/// With `tiles` > 1, C is cut into a grid of that many blocks, each one single-threaded
/// gemm call, claimed one at a time by the calling thread and by up to `helpers` threads
/// of rayon's pool ([`Claims`]). gemm's own threading (`Parallelism::Rayon`) scaled worse
/// on a 16-core host: 743-787 against 921-1067 GFLOP/s at 1024³ (BENCHMARKS.md, session
/// 20). The blocks' sizes follow the thread count and gemm's blocking of k follows
/// theirs, so the last bits of a product can differ between machines with different core
/// counts; which thread computes a block does not change it.
fn gemm_into<T: 'static + Copy + Send + Sync + num_traits::Zero + num_traits::One>(
    c: &mut [T],
    a: &[T],
    b: &[T],
    (m, k, n): (usize, usize, usize),
    (ta, tb): (bool, bool),
    (tiles, helpers): (usize, usize),
) {
    let (a_strides, b_strides) = (strides(m, k, ta), strides(k, n, tb));
    if tiles <= 1 {
        // SAFETY: C, A and B hold m*n, m*k and k*n elements (checked by the caller), and
        // the strides describe row-major (or transposed row-major) layouts within them.
        unsafe { gemm_block(c.as_mut_ptr(), n, a.as_ptr(), a_strides, b.as_ptr(), b_strides, (m, k, n)) };
        return;
    }
    let claims = Arc::new(Claims {
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        panicked: AtomicBool::new(false),
        unstarted: AtomicUsize::new(helpers.saturating_sub(1)),
        c: c.as_mut_ptr(),
        a: a.as_ptr(),
        b: b.as_ptr(),
        a_strides,
        b_strides,
        dims: (m, k, n),
        grid: grid(tiles, m, n),
    });
    if helpers > 0 {
        let first = Arc::clone(&claims);
        rayon::spawn(move || first.help());
    }
    claims.work();
    // The blocks other threads claimed are in progress: wait for them here (each is at
    // most one block's work) rather than sleep and pay a wake-up.
    let mut spins = 0u32;
    while claims.done.load(Ordering::Acquire) < claims.blocks() {
        if spins < 1 << 10 {
            std::hint::spin_loop();
            spins += 1;
        } else {
            std::thread::yield_now();
        }
    }
    // Raised only now that no block is in progress, so eval's catch turns it into an error
    // with C no longer written by anyone.
    if claims.panicked.load(Ordering::Relaxed) {
        panic!("matmul: gemm panicked in a block of a threaded {m}x{k}x{n} product");
    }
}

/// One threaded product's blocks, claimed one at a time (`next`) by the calling thread
/// and by helpers on rayon's pool. The caller computes from the start instead of
/// sleeping until a woken worker has split the work (a parallel loop on rayon's pool
/// costs 14-60 us to start on 16 threads, a 128³ product 25 us: BENCHMARKS.md, session
/// 22), and a helper that wakes late finds the blocks gone and leaves. The pointers are
/// read only for a claimed block, and the caller returns only once every block is done,
/// so a helper that runs after the product returned touches nothing but the counters
/// this `Arc` keeps.
struct Claims<T> {
    next: AtomicUsize,
    /// Blocks finished (or abandoned to a panic): the caller waits for all of them.
    done: AtomicUsize,
    /// A block's gemm call panicked (caught, so the block still counts as done).
    panicked: AtomicBool,
    /// Helpers still to be started (each started one starts up to two more).
    unstarted: AtomicUsize,
    c: *mut T,
    a: *const T,
    b: *const T,
    a_strides: (isize, isize),
    b_strides: (isize, isize),
    dims: (usize, usize, usize),
    grid: (usize, usize),
}
// SAFETY: the pointers are dereferenced only for claimed blocks, each by the one thread
// that claimed it, while the product's caller waits for all of them (see `Claims`).
unsafe impl<T: Send + Sync> Send for Claims<T> {}
unsafe impl<T: Send + Sync> Sync for Claims<T> {}

impl<T: 'static + Copy + Send + Sync + num_traits::Zero + num_traits::One> Claims<T> {
    fn blocks(&self) -> usize {
        self.grid.0 * self.grid.1
    }

    /// Computes blocks until none is left to claim.
    fn work(&self) {
        let ((m, k, n), (gr, gc)) = (self.dims, self.grid);
        loop {
            let t = self.next.fetch_add(1, Ordering::Relaxed);
            if t >= self.blocks() {
                return;
            }
            let (bi, bj) = (t / gc, t % gc);
            let (i0, i1) = (m * bi / gr, m * (bi + 1) / gr);
            let (j0, j1) = (n * bj / gc, n * (bj + 1) / gc);
            if i0 < i1 && j0 < j1 {
                // SAFETY: block (i0..i1, j0..j1) of the m x n row-major C, rows i0..i1 of
                // A and columns j0..j1 of B lie within the caller's slices (m*n, m*k,
                // k*n elements, checked by the caller), which outlive every claimed block
                // (the caller waits for `done`); blocks are disjoint and each is claimed
                // once, so no two threads write one element.
                let block = || unsafe {
                    gemm_block(
                        self.c.wrapping_add(i0 * n + j0),
                        n,
                        self.a.wrapping_offset(i0 as isize * self.a_strides.1),
                        self.a_strides,
                        self.b.wrapping_offset(j0 as isize * self.b_strides.0),
                        self.b_strides,
                        (i1 - i0, k, j1 - j0),
                    )
                };
                // Caught so the block still counts as done: the caller must not return
                // (and free C) before every claimed block has stopped, and a panic on a
                // helper would otherwise abort the process (rayon's default).
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(block)).is_err() {
                    self.panicked.store(true, Ordering::Relaxed);
                }
            }
            // Release: the caller's acquire load of `done` sees this block's writes.
            self.done.fetch_add(1, Ordering::Release);
        }
    }

    /// A helper's job: start up to two more helpers while blocks remain (a tree, so the
    /// caller wakes one thread and the pool wakes the rest), then claim blocks.
    fn help(self: Arc<Self>) {
        for _ in 0..2 {
            if self.next.load(Ordering::Relaxed) < self.blocks()
                && self.unstarted.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| u.checked_sub(1)).is_ok()
            {
                let next = Arc::clone(&self);
                rayon::spawn(move || next.help());
            }
        }
        self.work();
    }
}

fn matmul_float<T>(a: &[T], b: &[T], p: &MatmulPlan) -> Vec<T>
where
    T: CpuElem + Send + Sync + num_traits::Zero + num_traits::One,
{
    let (m, k, n) = (p.m, p.k, p.n);
    let offs: Vec<(usize, usize)> = p.offsets().collect();
    // gemm writes every element without reading it (`read_dst` false): an idle buffer of
    // the pool serves as is, with its pages already mapped, and a new one is not zeroed
    // twice.
    let mut c = super::pool::output::<T>(p.batches() * m * n);
    if m * n == 0 {
        return c;
    }
    let (threads, trans) = (rayon::current_num_threads(), (p.trans_a, p.trans_b));
    let per_batch = m * n * k;
    let run = |&(oa, ob): &(usize, usize), cm: &mut [T], split: (usize, usize)| {
        gemm_into(cm, &a[oa..oa + m * k], &b[ob..ob + k * n], (m, k, n), trans, split);
    };
    if offs.len() > 1 && per_batch < (1 << 18) {
        // Many small matrices: one thread per batch.
        c.par_chunks_mut(m * n).zip(offs.par_iter()).for_each(|(cm, x)| run(x, cm, (1, 0)));
    } else {
        let tiles = blocks(per_batch, threads);
        let helpers = (threads - 1).min(tiles - 1);
        for (cm, x) in c.chunks_mut(m * n).zip(offs.iter()) {
            run(x, cm, (tiles, helpers));
        }
    }
    c
}

fn matmul_i64(a: &[i64], b: &[i64], p: &MatmulPlan) -> Vec<i64> {
    let (m, k, n) = (p.m, p.k, p.n);
    let ((a_cs, a_rs), (b_cs, b_rs)) = (strides(m, k, p.trans_a), strides(k, n, p.trans_b));
    let mut c = vec![0i64; p.batches() * m * n];
    if m * n == 0 {
        return c;
    }
    for (cm, (oa, ob)) in c.chunks_mut(m * n).zip(p.offsets()) {
        for i in 0..m {
            for q in 0..k {
                let x = a[oa + (i as isize * a_rs + q as isize * a_cs) as usize];
                for j in 0..n {
                    let y = b[ob + (q as isize * b_rs + j as isize * b_cs) as usize];
                    cm[i * n + j] = cm[i * n + j].wrapping_add(x.wrapping_mul(y));
                }
            }
        }
    }
    c
}

/// `a @ b` as `plan` lays them out. Both operands have one dtype (`Matmul::infer`).
pub(super) fn matmul(a: &CpuData, b: &CpuData, plan: &MatmulPlan) -> Result<CpuData> {
    let mismatch = || Error::Internal(format!("matmul: operands of different dtypes {} and {}", a.dtype(), b.dtype()));
    Ok(match a {
        CpuData::F32(x) => CpuData::F32(matmul_float(x, f32::unwrap(b).ok_or_else(mismatch)?, plan)),
        CpuData::F64(x) => CpuData::F64(matmul_float(x, f64::unwrap(b).ok_or_else(mismatch)?, plan)),
        CpuData::F16(_) | CpuData::BF16(_) => {
            let (x, y) = (a.astype(DType::F32), b.astype(DType::F32));
            matmul(&x, &y, plan)?.astype(a.dtype())
        }
        CpuData::Bool(_) | CpuData::U32(_) | CpuData::I32(_) | CpuData::I64(_) => {
            if a.dtype() != b.dtype() {
                return Err(mismatch());
            }
            let (x, y) = (a.astype(DType::I64), b.astype(DType::I64));
            let (Some(x), Some(y)) = (i64::unwrap(&x), i64::unwrap(&y)) else {
                return Err(Error::Internal("astype(I64) did not give I64".into()));
            };
            CpuData::I64(matmul_i64(x, y, plan)).astype(a.dtype())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_follow_work_and_threads() {
        assert_eq!(blocks(1 << 30, 1), 1, "one thread");
        assert_eq!(blocks(96 * 96 * 96, 16), 1, "below MIN_THREADED");
        assert_eq!(blocks(128 * 128 * 128, 16), 8, "2^21 in blocks of 2^18");
        assert_eq!(blocks(128 * 128 * 128, 2), 8);
        assert_eq!(blocks(256 * 256 * 256, 16), 64, "capped at four a thread");
        assert_eq!(blocks(1 << 30, 2), 8);
    }

    /// Many products in a row, each with more helpers than blocks: helpers that start
    /// after their product returned find nothing to claim and touch nothing else, and
    /// every product is whole.
    #[test]
    fn late_helpers_leave_finished_products_alone() {
        let (m, k, n) = (24, 16, 20);
        let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 - 3.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32 - 2.0).collect();
        let mut want = vec![0f32; m * n];
        gemm_into(&mut want, &a, &b, (m, k, n), (false, false), (1, 0));
        for round in 0..300 {
            let mut c = vec![f32::NAN; m * n];
            gemm_into(&mut c, &a, &b, (m, k, n), (false, false), (6, 8));
            assert_eq!(c, want, "round {round}");
        }
    }

    /// Products large enough that helpers compute blocks while the caller does, from a
    /// plain thread, from inside a one-thread pool (its only worker is the caller) and
    /// from inside a parallel loop on the global pool.
    #[test]
    fn helpers_compute_beside_callers_on_and_off_the_pool() {
        let (m, k, n) = (160, 96, 144);
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 23) as f32 - 11.0) / 8.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 19) as f32 - 9.0) / 4.0).collect();
        let mut want = vec![0f32; m * n];
        gemm_into(&mut want, &a, &b, (m, k, n), (false, false), (8, 0));
        let product = |helpers: usize| {
            let mut c = vec![f32::NAN; m * n];
            gemm_into(&mut c, &a, &b, (m, k, n), (false, false), (8, helpers));
            c
        };
        for _ in 0..20 {
            assert_eq!(product(1), want);
            assert_eq!(product(7), want);
        }
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        assert_eq!(one.install(|| product(3)), want);
        let all: Vec<Vec<f32>> = (0..4).into_par_iter().map(|_| product(2)).collect();
        assert!(all.iter().all(|c| *c == want));
    }

    #[test]
    fn grids_keep_blocks_square() {
        assert_eq!(grid(16, 2048, 2048), (4, 4));
        assert_eq!(grid(2, 1024, 1024), (1, 2));
        assert_eq!(grid(8, 4096, 256), (8, 1));
        assert_eq!(grid(1, 7, 9), (1, 1));
    }

    /// Every block of a tiled product (and the untiled one), with odd sizes and either
    /// operand transposed, holds the f64 reference product.
    #[test]
    fn tiled_products_match_the_reference() {
        for &(m, k, n, ta, tb, tiles) in &[
            (37, 53, 29, false, false, 4),
            (64, 31, 65, true, false, 6),
            (5, 17, 130, false, true, 16),
            (9, 8, 7, true, true, 3),
            (33, 20, 17, true, false, 1),
            // A 2 x 8 grid over 3 columns: five blocks are empty.
            (2, 9, 3, true, true, 16),
        ] {
            let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 23) as f32 - 11.0) / 8.0).collect();
            let b: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 19) as f32 - 9.0) / 4.0).collect();
            let at = |i: usize, q: usize| if ta { a[q * m + i] } else { a[i * k + q] } as f64;
            let bt = |q: usize, j: usize| if tb { b[j * k + q] } else { b[q * n + j] } as f64;
            // The caller alone, and with helpers from the pool (more than blocks, too).
            for helpers in [0, 3, 20] {
                let mut c = vec![f32::NAN; m * n];
                gemm_into(&mut c, &a, &b, (m, k, n), (ta, tb), (tiles, helpers));
                for i in 0..m {
                    for j in 0..n {
                        let want: f64 = (0..k).map(|q| at(i, q) * bt(q, j)).sum();
                        let got = c[i * n + j] as f64;
                        assert!(
                            (got - want).abs() <= 1e-5 * want.abs().max(1.0),
                            "{m}x{k}x{n} ({ta}, {tb}) {helpers} helpers [{i}, {j}]: {got} vs {want}"
                        );
                    }
                }
            }
        }
    }
}
