//! `Matmul` and [`MatmulPlan`], the geometry both backends run it with.

use super::{FusionClass, Meta, Rules, arity, unbroadcast};
use crate::array::Array;
use crate::error::{Error, Result};
use crate::shape::{StridedIter, broadcast_shapes, broadcast_strides, merge_axes, numel};

/// Inputs `a: [..., M, K]`, `b: [..., K, N]` of one float dtype and one rank, batch dims
/// broadcastable; output `[broadcast(batch), M, N]`. With `trans_a`, input 0 holds A with
/// its last two axes swapped (`[..., K, M]`) and is read transposed in place; likewise
/// `trans_b` (`[..., N, K]`). `ops` sets them for transposed views, so a transpose
/// feeding a matmul is never copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Matmul {
    /// Input 0 is stored `[..., K, M]`.
    pub trans_a: bool,
    /// Input 1 is stored `[..., N, K]`.
    pub trans_b: bool,
}

impl Rules for Matmul {
    fn name(&self) -> &'static str {
        "matmul"
    }
    fn infer(&self, inputs: &[&Meta]) -> Result<Meta> {
        arity("matmul", inputs, 2)?;
        let (a, b) = (inputs[0], inputs[1]);
        if a.dtype != b.dtype || !a.dtype.is_float() {
            return Err(Error::dtype(
                "matmul",
                b.dtype,
                format!("operands must share one float dtype, got {}", a.dtype),
            ));
        }
        if a.shape.len() < 2 || a.shape.len() != b.shape.len() {
            return Err(Error::shape(
                "matmul",
                format!("operands must have one rank of at least 2, got {:?} and {:?}", a.shape, b.shape),
            ));
        }
        let p = MatmulPlan::new(&a.shape, &b.shape, (self.trans_a, self.trans_b))?;
        let mut shape = p.out_batch.clone();
        shape.extend_from_slice(&[p.m, p.n]);
        Ok(Meta::new(shape, a.dtype))
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::Opaque
    }
    /// With `C = A B` (A and B as the flags read them): `dA = G B^T`, `dB = A^T G`, each
    /// built as one matmul whose flags read the stored operands in place, then transposed
    /// back to the stored layout where an input is stored transposed, and summed over
    /// batch axes the input was broadcast along.
    fn vjp(&self, primals: &[Array], _: &Array, cotangent: &Array) -> Result<Vec<Option<Array>>> {
        let (a, b, g) = (&primals[0], &primals[1], cotangent);
        let mm = |trans_a, trans_b, x: &Array, y: &Array| {
            Array::from_op(Matmul { trans_a, trans_b }, [x.clone(), y.clone()])
        };
        let da = if self.trans_a {
            // stored a = A^T, so da = (G B^T)^T = B G^T.
            mm(self.trans_b, true, b, g)?
        } else {
            mm(false, !self.trans_b, g, b)?
        };
        let db = if self.trans_b {
            // stored b = B^T, so db = (A^T G)^T = G^T A.
            mm(true, self.trans_a, g, a)?
        } else {
            mm(!self.trans_a, false, a, g)?
        };
        Ok(vec![Some(unbroadcast(&da, a.shape())?), Some(unbroadcast(&db, b.shape())?)])
    }
    fn jvp(&self, primals: &[Array], _: &Array, tangents: &[Option<Array>]) -> Result<Option<Array>> {
        let ta = tangents[0].as_ref().map(|t| Array::from_op(*self, [t.clone(), primals[1].clone()])).transpose()?;
        let tb = tangents[1].as_ref().map(|t| Array::from_op(*self, [primals[0].clone(), t.clone()])).transpose()?;
        super::calculus::add_opt(ta, tb)
    }
}

/// How a `Matmul` walks its operands: the one place both backends get the geometry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatmulPlan {
    /// Output rows.
    pub m: usize,
    /// Inner dimension.
    pub k: usize,
    /// Output columns.
    pub n: usize,
    /// A is stored `K x M`.
    pub trans_a: bool,
    /// B is stored `N x K`.
    pub trans_b: bool,
    /// Row stride of A as stored (K, or M when transposed).
    pub lda: usize,
    /// Row stride of B as stored (N, or K when transposed).
    pub ldb: usize,
    /// The output's batch shape, unmerged.
    pub out_batch: Vec<usize>,
    /// Batch axes merged where both operands walk them contiguously (size-1 axes dropped).
    pub batch_shape: Vec<usize>,
    /// Element strides of A's and B's matrices along `batch_shape` (0 where broadcast).
    pub batch_strides: [Vec<isize>; 2],
}

impl MatmulPlan {
    /// The plan for stored operand shapes `a` and `b` of one rank.
    pub fn new(a: &[usize], b: &[usize], (trans_a, trans_b): (bool, bool)) -> Result<MatmulPlan> {
        let (ra, rb) = (a.len(), b.len());
        let (a0, a1, b0, b1) = (a[ra - 2], a[ra - 1], b[rb - 2], b[rb - 1]);
        let (m, k) = if trans_a { (a1, a0) } else { (a0, a1) };
        let (k2, n) = if trans_b { (b1, b0) } else { (b0, b1) };
        if k != k2 {
            return Err(Error::shape("matmul", format!("inner dimensions differ: {a:?} @ {b:?} ({k} vs {k2})")));
        }
        let out_batch = broadcast_shapes("matmul", &a[..ra - 2], &b[..rb - 2])
            .map_err(|_| Error::shape("matmul", format!("batch dimensions do not broadcast: {a:?} @ {b:?}")))?;
        let scale = |s: Vec<isize>, by: usize| s.into_iter().map(|x| x * by as isize).collect::<Vec<_>>();
        let sa = scale(broadcast_strides(&a[..ra - 2], &out_batch), m * k);
        let sb = scale(broadcast_strides(&b[..rb - 2], &out_batch), k * n);
        let (batch_shape, strides) = merge_axes(&out_batch, &[sa, sb]);
        let mut it = strides.into_iter();
        let batch_strides = [it.next().unwrap_or_default(), it.next().unwrap_or_default()];
        let lda = if trans_a { m } else { k };
        let ldb = if trans_b { k } else { n };
        Ok(MatmulPlan { m, k, n, trans_a, trans_b, lda, ldb, out_batch, batch_shape, batch_strides })
    }

    /// Number of output matrices.
    pub fn batches(&self) -> usize {
        numel(&self.out_batch)
    }

    /// For each output matrix, in order, the element offsets of its A and B matrices.
    pub fn offsets(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let ia = StridedIter::new(&self.batch_shape, &self.batch_strides[0], 0);
        let ib = StridedIter::new(&self.batch_shape, &self.batch_strides[1], 0);
        ia.zip(ib)
    }
}

#[cfg(test)]
mod tests {
    use super::MatmulPlan;

    #[test]
    fn plan_merges_batches_and_reads_transposes() {
        // [2, 3] batches of A broadcast against [1, 3] of B: B's batch stride is 0 on axis 0.
        let p = MatmulPlan::new(&[2, 3, 4, 5], &[1, 3, 5, 6], (false, false)).unwrap();
        assert_eq!((p.m, p.k, p.n, p.lda, p.ldb), (4, 5, 6, 5, 6));
        assert_eq!(p.batches(), 6);
        let offs: Vec<_> = p.offsets().collect();
        assert_eq!(offs[0], (0, 0));
        assert_eq!(offs[1], (20, 30));
        assert_eq!(offs[3], (60, 0));
        let t = MatmulPlan::new(&[1, 5, 4], &[1, 6, 5], (true, true)).unwrap();
        assert_eq!((t.m, t.k, t.n, t.lda, t.ldb), (4, 5, 6, 4, 5));
        assert!(MatmulPlan::new(&[4, 5], &[4, 6], (false, false)).is_err());
    }
}
