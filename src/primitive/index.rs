//! Indexing and joining: `Concatenate`, `Gather`, `Scatter`.

use super::table::op_table;
use super::{AsStrided, FusionClass, Meta, Rules, arity, or_zeros};
use crate::array::Array;
use crate::dtype::DType;
use crate::error::{Error, Result};

op_table! {
    /// How `Scatter` combines updates with the destination.
    pub enum ScatterMode: "SCATTER" {
        /// Overwrite; where indices repeat, which update wins is unspecified.
        Assign = 0, "assign", ANY;
        /// Accumulate; repeated indices add up (integers wrap).
        Add = 1, "add", ANY;
    }
}

fn index_dtype(op: &'static str, d: DType) -> Result<()> {
    match d {
        DType::I32 | DType::U32 => Ok(()),
        DType::Bool | DType::I64 | DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {
            Err(Error::dtype(op, d, "indices must be int32 or uint32"))
        }
    }
}

fn check_axis(op: &'static str, axis: usize, ndim: usize) -> Result<()> {
    if axis >= ndim {
        return Err(Error::Axis { op, axis: axis as isize, ndim });
    }
    Ok(())
}

/// Indices as `Gather` reads them: negative ones counted from the end, then clamped into
/// `[0, n)`, in `I32` (so `Scatter` lands on the same positions).
fn clamped(idx: &Array, n: usize) -> Result<Array> {
    // Integer scalars, so the indices keep their dtype.
    let (n, last) = (n as i64, n.saturating_sub(1) as i64);
    match idx.dtype() {
        DType::U32 => idx.minimum(last)?.astype(DType::I32),
        _ => crate::where_(&idx.lt(0)?, &idx.add(n)?, idx)?.maximum(0)?.minimum(last),
    }
}

/// True where `Scatter` applies an update: `-n <= i < n`.
fn in_range(idx: &Array, n: usize) -> Result<Array> {
    let n = n as i64;
    match idx.dtype() {
        DType::U32 => idx.lt(n),
        _ => idx.ge(-n)?.logical_and(&idx.lt(n)?),
    }
}

/// Inputs of one dtype and rank, equal except along `axis`; joined along it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Concatenate {
    /// The axis.
    pub axis: usize,
}

impl Rules for Concatenate {
    fn name(&self) -> &'static str {
        "concatenate"
    }
    fn infer(&self, inputs: &[&Meta]) -> Result<Meta> {
        let Some(first) = inputs.first() else {
            return Err(Error::invalid("concatenate", "needs at least one input"));
        };
        check_axis("concatenate", self.axis, first.shape.len())?;
        let mut shape = first.shape.clone();
        shape[self.axis] = 0;
        for m in inputs {
            if m.dtype != first.dtype {
                return Err(Error::dtype("concatenate", m.dtype, format!("inputs must all be {}", first.dtype)));
            }
            let same = m.shape.len() == shape.len()
                && (0..shape.len()).all(|i| i == self.axis || m.shape[i] == first.shape[i]);
            if !same {
                return Err(Error::shape(
                    "concatenate",
                    format!("shapes {:?} and {:?} differ outside axis {}", first.shape, m.shape, self.axis),
                ));
            }
            shape[self.axis] += m.shape[self.axis];
        }
        Ok(Meta::new(shape, first.dtype))
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::Opaque
    }
    /// The cotangent's slab for each input.
    fn vjp(&self, primals: &[Array], _: &Array, cotangent: &Array) -> Result<Vec<Option<Array>>> {
        if !cotangent.dtype().is_float() {
            return Ok(vec![None; primals.len()]);
        }
        let strides = crate::shape::contiguous_strides(cotangent.shape());
        let mut start = 0;
        let mut out = Vec::with_capacity(primals.len());
        for p in primals {
            let view = AsStrided {
                shape: p.shape().to_vec(),
                strides: strides.clone(),
                offset: start * strides[self.axis] as usize,
            };
            start += p.shape()[self.axis];
            out.push(Some(Array::from_op(view, [cotangent.clone()])?));
        }
        Ok(out)
    }
    fn jvp(&self, primals: &[Array], output: &Array, tangents: &[Option<Array>]) -> Result<Option<Array>> {
        if !output.dtype().is_float() || tangents.iter().all(Option::is_none) {
            return Ok(None);
        }
        let parts = primals.iter().zip(tangents).map(|(p, t)| or_zeros(t.clone(), p)).collect::<Result<Vec<_>>>()?;
        Ok(Some(Array::from_op(*self, parts)?))
    }
}

/// Inputs `(src, indices)`, same rank, `indices` (`I32` or `U32`) equal to `src`'s
/// shape except along `axis`: `out[i] = src[i with i[axis] = indices[i]]`. Output shape =
/// indices' shape. Indices clamp into range; a non-empty gather from an empty axis has
/// nothing to clamp to and is refused here, on every device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Gather {
    /// The axis.
    pub axis: usize,
}

impl Rules for Gather {
    fn name(&self) -> &'static str {
        "gather"
    }
    fn infer(&self, inputs: &[&Meta]) -> Result<Meta> {
        arity("gather", inputs, 2)?;
        let (src, idx) = (inputs[0], inputs[1]);
        index_dtype("gather", idx.dtype)?;
        check_axis("gather", self.axis, src.shape.len())?;
        let fits = idx.shape.len() == src.shape.len()
            && (0..src.shape.len()).all(|d| d == self.axis || idx.shape[d] == src.shape[d]);
        if !fits {
            return Err(Error::shape(
                "gather",
                format!("indices {:?} must match {:?} except along axis {}", idx.shape, src.shape, self.axis),
            ));
        }
        if src.shape[self.axis] == 0 && idx.numel() > 0 {
            return Err(Error::shape(
                "gather",
                format!("cannot take from empty axis {} of shape {:?}", self.axis, src.shape),
            ));
        }
        Ok(Meta::new(idx.shape.clone(), src.dtype))
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::Opaque
    }
    /// Cotangents add back at the (clamped) positions read; indices get none.
    fn vjp(&self, primals: &[Array], _: &Array, cotangent: &Array) -> Result<Vec<Option<Array>>> {
        let (src, idx) = (&primals[0], &primals[1]);
        if !src.dtype().is_float() {
            return Ok(vec![None, None]);
        }
        let at = clamped(idx, src.shape()[self.axis])?;
        let zeros = src.zeros_like()?;
        let add = Scatter { axis: self.axis, mode: ScatterMode::Add };
        Ok(vec![Some(Array::from_op(add, [zeros, at, cotangent.clone()])?), None])
    }
    fn jvp(&self, primals: &[Array], _: &Array, tangents: &[Option<Array>]) -> Result<Option<Array>> {
        tangents[0].as_ref().map(|t| Array::from_op(*self, [t.clone(), primals[1].clone()])).transpose()
    }
}

/// Inputs `(dst, indices, updates)`; `indices` and `updates` have one shape, equal to
/// `dst`'s except along `axis`: `out = dst; out[i with i[axis] = indices[i]] (op)= updates[i]`.
/// Out-of-range updates are dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Scatter {
    /// The axis.
    pub axis: usize,
    /// Assign or add.
    pub mode: ScatterMode,
}

impl Rules for Scatter {
    fn name(&self) -> &'static str {
        match self.mode {
            ScatterMode::Assign => "scatter",
            ScatterMode::Add => "scatter_add",
        }
    }
    fn infer(&self, inputs: &[&Meta]) -> Result<Meta> {
        let op = self.name();
        arity(op, inputs, 3)?;
        let (dst, idx, upd) = (inputs[0], inputs[1], inputs[2]);
        index_dtype(op, idx.dtype)?;
        check_axis(op, self.axis, dst.shape.len())?;
        if upd.dtype != dst.dtype {
            return Err(Error::dtype(op, upd.dtype, format!("updates must be {} like the destination", dst.dtype)));
        }
        let fits = idx.shape.len() == dst.shape.len()
            && (0..dst.shape.len()).all(|d| d == self.axis || idx.shape[d] == dst.shape[d]);
        if !fits || upd.shape != idx.shape {
            return Err(Error::shape(
                op,
                format!(
                    "indices {:?} and updates {:?} must have one shape, equal to {:?} except along axis {}",
                    idx.shape, upd.shape, dst.shape, self.axis
                ),
            ));
        }
        Ok(dst.clone())
    }
    fn fusion_class(&self) -> FusionClass {
        FusionClass::Opaque
    }
    /// The destination's cotangent where no update landed (everywhere, for add); each
    /// update's cotangent read back at its index (zero for dropped, out-of-range ones).
    /// Where an assign repeats an index, every repeat gets the cotangent.
    fn vjp(&self, primals: &[Array], _: &Array, cotangent: &Array) -> Result<Vec<Option<Array>>> {
        let (dst, idx, upd) = (&primals[0], &primals[1], &primals[2]);
        if !dst.dtype().is_float() {
            return Ok(vec![None, None, None]);
        }
        let n = dst.shape()[self.axis];
        let g_dst = match self.mode {
            ScatterMode::Add => cotangent.clone(),
            ScatterMode::Assign => {
                let zeros = upd.zeros_like()?;
                Array::from_op(*self, [cotangent.clone(), idx.clone(), zeros])?
            }
        };
        let read = Array::from_op(Gather { axis: self.axis }, [cotangent.clone(), clamped(idx, n)?])?;
        let g_upd = crate::where_(&in_range(idx, n)?, &read, 0.0)?;
        Ok(vec![Some(g_dst), None, Some(g_upd)])
    }
    fn jvp(&self, primals: &[Array], output: &Array, tangents: &[Option<Array>]) -> Result<Option<Array>> {
        if !output.dtype().is_float() || (tangents[0].is_none() && tangents[2].is_none()) {
            return Ok(None);
        }
        let inputs = vec![
            or_zeros(tangents[0].clone(), &primals[0])?,
            primals[1].clone(),
            or_zeros(tangents[2].clone(), &primals[2])?,
        ];
        Ok(Some(Array::from_op(*self, inputs)?))
    }
}
