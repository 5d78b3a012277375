//! Linear algebra: matmul (NumPy's rules, lowered to `Matmul`) and outer (a broadcast
//! `Binary` multiply).

use crate::array::{Array, State};
use crate::dtype::{DType, promote};
use crate::error::{Error, Result};
use crate::primitive::{AsStrided, Binary, BinaryOp, Full, Matmul, Primitive};
use crate::shape::{broadcast_shapes, contiguous_strides};

impl Array {
    /// Matrix product with NumPy's `matmul` rules: a 1-D left operand is a row vector and
    /// a 1-D right operand a column vector (the added axis is removed from the result);
    /// leading batch axes broadcast. Integers and bool compute in `F32`; mixed float
    /// dtypes are promoted. 0-d operands are an error (use `mul`).
    pub fn matmul(&self, other: &Array) -> Result<Array> {
        let (sa, sb) = (self.shape(), other.shape());
        if sa.is_empty() || sb.is_empty() {
            return Err(Error::shape("matmul", format!("0-d operands are not allowed: {sa:?} @ {sb:?}")));
        }
        let mut a_shape = sa.to_vec();
        let mut b_shape = sb.to_vec();
        if a_shape.len() == 1 {
            a_shape.insert(0, 1);
        }
        if b_shape.len() == 1 {
            b_shape.push(1);
        }
        let (na, nb) = (a_shape.len(), b_shape.len());
        let (m, k, k2, n) = (a_shape[na - 2], a_shape[na - 1], b_shape[nb - 2], b_shape[nb - 1]);
        if k != k2 {
            return Err(Error::shape("matmul", format!("inner dimensions differ: {sa:?} @ {sb:?} ({k} vs {k2})")));
        }
        let batch = broadcast_shapes("matmul", &a_shape[..na - 2], &b_shape[..nb - 2])
            .map_err(|_| Error::shape("matmul", format!("batch dimensions do not broadcast: {sa:?} @ {sb:?}")))?;
        let dtype = promote(self.dtype(), other.dtype()).to_float();
        // Equal ranks through free reshapes, so kernels see only size-1 batch broadcasting.
        let pad = |s: &[usize]| -> Vec<usize> {
            let mut v = vec![1; batch.len() + 2 - s.len()];
            v.extend_from_slice(s);
            v
        };
        let (a, trans_a) = transposed_source(self.astype(dtype)?.reshape_to(pad(&a_shape))?);
        let (b, trans_b) = transposed_source(other.astype(dtype)?.reshape_to(pad(&b_shape))?);
        let mut out = batch.clone();
        out.extend_from_slice(&[m, n]);
        let prod = if k == 0 {
            // An empty sum; kernels never see a zero-length inner axis.
            Array::from_op(Full { value: 0.0, shape: out, dtype }, [])?
        } else {
            Array::from_op(Matmul { trans_a, trans_b }, [a, b])?
        };
        let mut result = batch;
        if sa.len() > 1 {
            result.push(m);
        }
        if sb.len() > 1 {
            result.push(n);
        }
        prod.reshape_to(result)
    }

    /// Outer product `out[i, j] = a[i] * b[j]` of the flattened operands; dtypes are
    /// promoted (bool gives the logical and).
    pub fn outer(&self, other: &Array) -> Result<Array> {
        outer(self, other)
    }
}

/// `(source, true)` when `x` is a still-pending view that only swaps the last two axes of a
/// same-rank array (`transpose`, `swapaxes(-1, -2)`, `.T` of a matrix), so the matmul reads
/// the source transposed instead of copying it; else `(x, false)`.
fn transposed_source(x: Array) -> (Array, bool) {
    let src = {
        let State::Pending { op: Primitive::AsStrided(AsStrided { strides, offset: 0, .. }), inputs } = &*x.0.lock()
        else {
            return (x, false);
        };
        let src = &inputs[0];
        let r = src.shape().len();
        let mut want_shape = src.shape().to_vec();
        let mut want_strides = contiguous_strides(src.shape());
        if r < 2 || r != x.shape().len() {
            return (x.clone(), false);
        }
        want_shape.swap(r - 2, r - 1);
        want_strides.swap(r - 2, r - 1);
        if want_shape != x.shape() || &want_strides != strides {
            return (x.clone(), false);
        }
        src.clone()
    };
    (src, true)
}

/// Outer product of the flattened operands: `out[i, j] = a[i] * b[j]`, shape `[a.size(),
/// b.size()]`, dtype promoted (bool gives the logical and).
pub fn outer(a: &Array, b: &Array) -> Result<Array> {
    let dtype = promote(a.dtype(), b.dtype());
    let (n, m) = (a.size(), b.size());
    let a = a.astype(dtype)?.reshape_to(vec![n, 1])?;
    let b = b.astype(dtype)?.reshape_to(vec![1, m])?;
    let op = if dtype == DType::Bool { BinaryOp::LogicalAnd } else { BinaryOp::Mul };
    Array::from_op(Binary { op }, [a, b])
}

#[cfg(test)]
mod tests {
    use crate::array::{Array, State};
    use crate::primitive::{Matmul, Primitive};

    /// The matmul node of `x` (looking through the final reshape) and its input pointers.
    fn matmul_node(x: &Array) -> (Primitive, Vec<*const crate::array::Node>) {
        let mut cur = x.clone();
        loop {
            let next = match &*cur.0.lock() {
                State::Pending { op: op @ Primitive::Matmul(_), inputs } => {
                    return (op.clone(), inputs.iter().map(|i| i.ptr()).collect());
                }
                State::Pending { inputs, .. } => inputs[0].clone(),
                State::Running { .. } | State::Ready { .. } | State::Failed(_) => panic!("no pending matmul"),
            };
            cur = next;
        }
    }

    #[test]
    fn transposed_views_are_read_in_place() {
        let a = Array::from_slice(&[1f32, 2., 3., 4., 5., 6.], &[2, 3]).unwrap();
        let b = Array::from_slice(&[1f32, 2., 3., 4., 5., 6.], &[3, 2]).unwrap();
        let (op, ins) = matmul_node(&a.transpose(&[1, 0]).unwrap().matmul(&b.transpose(&[1, 0]).unwrap()).unwrap());
        assert!(matches!(op, Primitive::Matmul(Matmul { trans_a: true, trans_b: true })));
        assert_eq!(ins, [a.ptr(), b.ptr()]);
        // A permutation that moves a batch axis is not a matrix transpose: copied first.
        let c = Array::from_slice(&[0f32; 12], &[2, 2, 3]).unwrap();
        let (op, _) = matmul_node(&c.transpose(&[1, 0, 2]).unwrap().matmul(&c.transpose(&[0, 2, 1]).unwrap()).unwrap());
        assert!(matches!(op, Primitive::Matmul(Matmul { trans_a: false, trans_b: true })));
    }
}
