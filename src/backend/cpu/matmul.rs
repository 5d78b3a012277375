//! Matmul: floats through the `gemm` crate (blocked, SIMD, threaded), integers by a
//! plain loop in wrapping i64.

use rayon::prelude::*;

use super::storage::CpuData;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::{StridedIter, broadcast_strides, numel};

/// For each output batch, the element offsets of its `a` and `b` matrices.
fn batch_offsets(sa: &[usize], sb: &[usize], out: &[usize]) -> Vec<(usize, usize)> {
    let r = out.len();
    let (ba, bb, bo) = (&sa[..sa.len() - 2], &sb[..sb.len() - 2], &out[..r - 2]);
    let (ma, mb) = (sa[sa.len() - 2] * sa[sa.len() - 1], sb[sb.len() - 2] * sb[sb.len() - 1]);
    let ta = broadcast_strides(ba, bo);
    let tb = broadcast_strides(bb, bo);
    StridedIter::new(bo, &ta, 0).zip(StridedIter::new(bo, &tb, 0)).map(|(i, j)| (i * ma, j * mb)).collect()
}

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

/// (m, k, n) from the stored operand shapes.
fn dims(sa: &[usize], sb: &[usize], (ta, tb): (bool, bool)) -> (usize, usize, usize) {
    let (a0, a1, b0, b1) = (sa[sa.len() - 2], sa[sa.len() - 1], sb[sb.len() - 2], sb[sb.len() - 1]);
    (if ta { a1 } else { a0 }, if ta { a0 } else { a1 }, if tb { b0 } else { b1 })
}

fn matmul_float<T>(a: &[T], sa: &[usize], b: &[T], sb: &[usize], out: &[usize], t: (bool, bool)) -> Vec<T>
where
    T: 'static + Copy + Send + Sync + num_traits::Zero + num_traits::One,
{
    let (m, k, n) = dims(sa, sb, t);
    let offs = batch_offsets(sa, sb, out);
    let mut c = vec![T::zero(); numel(out)];
    if m * n == 0 {
        return c;
    }
    let (threads, trans) = (rayon::current_num_threads(), t);
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

fn matmul_i64(a: &[i64], sa: &[usize], b: &[i64], sb: &[usize], out: &[usize], t: (bool, bool)) -> Vec<i64> {
    let (m, k, n) = dims(sa, sb, t);
    let ((a_cs, a_rs), (b_cs, b_rs)) = (strides(m, k, t.0), strides(k, n, t.1));
    let mut c = vec![0i64; numel(out)];
    if m * n == 0 {
        return c;
    }
    for (cm, &(oa, ob)) in c.chunks_mut(m * n).zip(&batch_offsets(sa, sb, out)) {
        for i in 0..m {
            for p in 0..k {
                let x = a[oa + (i as isize * a_rs + p as isize * a_cs) as usize];
                for j in 0..n {
                    let y = b[ob + (p as isize * b_rs + j as isize * b_cs) as usize];
                    cm[i * n + j] = cm[i * n + j].wrapping_add(x.wrapping_mul(y));
                }
            }
        }
    }
    c
}

/// `trans`: (trans_a, trans_b) of [`crate::primitive::Primitive::Matmul`].
pub(super) fn matmul(
    a: &CpuData,
    sa: &[usize],
    b: &CpuData,
    sb: &[usize],
    out: &[usize],
    trans: (bool, bool),
) -> Result<CpuData> {
    Ok(match (a, b) {
        (CpuData::F32(x), CpuData::F32(y)) => CpuData::F32(matmul_float(x, sa, y, sb, out, trans)),
        (CpuData::F64(x), CpuData::F64(y)) => CpuData::F64(matmul_float(x, sa, y, sb, out, trans)),
        (CpuData::F16(_), CpuData::F16(_)) | (CpuData::BF16(_), CpuData::BF16(_)) => {
            let (x, y) = (a.astype(DType::F32), b.astype(DType::F32));
            matmul(&x, sa, &y, sb, out, trans)?.astype(a.dtype())
        }
        _ if a.dtype() == b.dtype() => {
            let (CpuData::I64(x), CpuData::I64(y)) = (a.astype(DType::I64), b.astype(DType::I64)) else {
                unreachable!("astype(I64) gives I64")
            };
            CpuData::I64(matmul_i64(&x, sa, &y, sb, out, trans)).astype(a.dtype())
        }
        _ => return Err(Error::Eval(format!("matmul: operands of different dtypes {} and {}", a.dtype(), b.dtype()))),
    })
}
