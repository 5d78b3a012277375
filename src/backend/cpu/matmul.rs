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

/// C = A @ B for row-major C (m x n); A (m x k) and B (k x n) row-major, or stored
/// transposed when `ta` / `tb` (gemm takes any strides, so nothing is copied).
fn gemm_into<T: 'static + Copy + num_traits::Zero + num_traits::One>(
    c: &mut [T],
    a: &[T],
    b: &[T],
    (m, k, n): (usize, usize, usize),
    (ta, tb): (bool, bool),
    threads: usize,
) {
    let par = if threads > 1 { gemm::Parallelism::Rayon(threads) } else { gemm::Parallelism::None };
    let ((a_cs, a_rs), (b_cs, b_rs)) = (strides(m, k, ta), strides(k, n, tb));
    // SAFETY: the slices hold exactly m*k, k*n and m*n elements (checked by the caller),
    // and the strides describe row-major (or transposed row-major) layouts within them.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            a_cs,
            a_rs,
            b.as_ptr(),
            b_cs,
            b_rs,
            T::zero(),
            T::one(),
            false,
            false,
            false,
            par,
        )
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
        let t = if per_batch_flops >= (1 << 22) { threads } else { 1 };
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
