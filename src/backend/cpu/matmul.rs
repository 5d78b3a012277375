//! Matmul: floats through the `gemm` crate (blocked, SIMD, threaded), integers by a
//! plain loop in wrapping i64.

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

/// A raw pointer the tiles of one product share; each writes only its own block.
#[derive(Clone, Copy)]
struct Shared<T>(*mut T);
// SAFETY: the blocks of `gemm_into` are disjoint, and the product waits for all of them.
unsafe impl<T: Send> Send for Shared<T> {}
unsafe impl<T: Send> Sync for Shared<T> {}
impl<T> Shared<T> {
    fn at(self, i: usize) -> *mut T {
        self.0.wrapping_add(i)
    }
}

/// Blocks of C per thread in a threaded product: more blocks than threads let rayon's
/// work stealing even out the threads. On a 16-core host four a thread gave 1475-1555
/// GFLOP/s at 2048³ where one gave 967-1092, and more from 512³ to 4096³; on the 2-core
/// machine the two are within noise (BENCHMARKS.md, session 20). Why one a thread lags
/// there (a slow thread, or blocks too large for the caches) was not profiled.
const TILES_PER_THREAD: usize = 4;

/// C = A @ B for row-major C (m x n); A (m x k) and B (k x n) row-major, or stored
/// transposed when `ta` / `tb` (gemm takes any strides, so nothing is copied).
///
/// Threaded as a grid of `tiles` blocks of C ([`TILES_PER_THREAD`] a thread), each one
/// single-threaded gemm call on its own rayon task. gemm's own threading
/// (`Parallelism::Rayon`) scaled worse on a 16-core host: 743-787 against 921-1067
/// GFLOP/s at 1024³, 859-1011 against 887-1067 at 2048³, with one block a thread
/// (BENCHMARKS.md, session 20); on the 2-core machine the two are within noise. The
/// blocks' sizes follow the thread count and gemm's blocking of k follows theirs, so the
/// last bits of a product can differ between machines with different core counts.
fn gemm_into<T: 'static + Copy + Send + Sync + num_traits::Zero + num_traits::One>(
    c: &mut [T],
    a: &[T],
    b: &[T],
    (m, k, n): (usize, usize, usize),
    (ta, tb): (bool, bool),
    tiles: usize,
) {
    let (gr, gc) = grid(tiles, m, n);
    let ((a_cs, a_rs), (b_cs, b_rs)) = (strides(m, k, ta), strides(k, n, tb));
    if gr * gc == 1 {
        // SAFETY: C, A and B hold m*n, m*k and k*n elements (checked by the caller), and
        // the strides describe row-major (or transposed row-major) layouts within them.
        unsafe { gemm_block(c.as_mut_ptr(), n, a.as_ptr(), (a_cs, a_rs), b.as_ptr(), (b_cs, b_rs), (m, k, n)) };
        return;
    }
    let dst = Shared(c.as_mut_ptr());
    (0..gr * gc).into_par_iter().for_each(|t| {
        let (bi, bj) = (t / gc, t % gc);
        let (i0, i1) = (m * bi / gr, m * (bi + 1) / gr);
        let (j0, j1) = (n * bj / gc, n * (bj + 1) / gc);
        if i0 == i1 || j0 == j1 {
            return;
        }
        // SAFETY: block (i0..i1, j0..j1) of the m x n row-major C, rows i0..i1 of A and
        // columns j0..j1 of B lie within the slices (m*n, m*k, k*n elements, checked by
        // the caller); the blocks are disjoint, so no two tasks write one element.
        unsafe {
            gemm_block(
                dst.at(i0 * n + j0),
                n,
                a.as_ptr().wrapping_offset(i0 as isize * a_rs),
                (a_cs, a_rs),
                b.as_ptr().wrapping_offset(j0 as isize * b_cs),
                (b_cs, b_rs),
                (i1 - i0, k, j1 - j0),
            )
        }
    });
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
    let per_batch_flops = m * n * k;
    let run = |&(oa, ob): &(usize, usize), cm: &mut [T], t: usize| {
        gemm_into(cm, &a[oa..oa + m * k], &b[ob..ob + k * n], (m, k, n), trans, t);
    };
    if offs.len() > 1 && per_batch_flops < (1 << 18) {
        // Many small matrices: one thread per batch.
        c.par_chunks_mut(m * n).zip(offs.par_iter()).for_each(|(cm, x)| run(x, cm, 1));
    } else {
        // Waking a second thread costs more than it saves below ~160³ (measured on the
        // 2-core CI machine: 128³ ran at ~165 GFLOP/s on one thread, ~110 on two; 256³ at
        // ~175 on one, 205–285 on two).
        let t = if per_batch_flops >= (1 << 22) && threads > 1 { threads * TILES_PER_THREAD } else { 1 };
        for (cm, x) in c.chunks_mut(m * n).zip(offs.iter()) {
            run(x, cm, t);
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
            let mut c = vec![f32::NAN; m * n];
            gemm_into(&mut c, &a, &b, (m, k, n), (ta, tb), tiles);
            for i in 0..m {
                for j in 0..n {
                    let want: f64 = (0..k).map(|q| at(i, q) * bt(q, j)).sum();
                    let got = c[i * n + j] as f64;
                    assert!(
                        (got - want).abs() <= 1e-5 * want.abs().max(1.0),
                        "{m}x{k}x{n} ({ta}, {tb}) [{i}, {j}]: {got} vs {want}"
                    );
                }
            }
        }
    }
}
