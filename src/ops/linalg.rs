//! Linear algebra: matmul (NumPy's rules, lowered to `Matmul`) and outer (a broadcast
//! `Binary` multiply).

use crate::array::Array;
use crate::dtype::{DType, promote};
use crate::error::{Error, Result};
use crate::primitive::{BinaryOp, Primitive};
use crate::shape::broadcast_shapes;

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
        let a = self.astype(dtype)?.reshape_to(pad(&a_shape))?;
        let b = other.astype(dtype)?.reshape_to(pad(&b_shape))?;
        let mut out = batch.clone();
        out.extend_from_slice(&[m, n]);
        let prod = if k == 0 {
            // An empty sum; kernels never see a zero-length inner axis.
            Array::from_op(Primitive::Full { value: 0.0 }, vec![], out.clone(), dtype)?
        } else {
            Array::from_op(Primitive::Matmul, vec![a, b], out.clone(), dtype)?
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

/// Outer product of the flattened operands: `out[i, j] = a[i] * b[j]`, shape `[a.size(),
/// b.size()]`, dtype promoted (bool gives the logical and).
pub fn outer(a: &Array, b: &Array) -> Result<Array> {
    let dtype = promote(a.dtype(), b.dtype());
    let (n, m) = (a.size(), b.size());
    let a = a.astype(dtype)?.reshape_to(vec![n, 1])?;
    let b = b.astype(dtype)?.reshape_to(vec![1, m])?;
    let op = if dtype == DType::Bool { BinaryOp::LogicalAnd } else { BinaryOp::Mul };
    Array::from_op(Primitive::Binary(op), vec![a, b], vec![n, m], dtype)
}
