//! Shape ops: views (transpose, slice, broadcast, flip...) lower to one `AsStrided` node,
//! size-keeping reshapes to `Reshape`, joins to `Concatenate`.
//!
//! A view of a still-pending view (or reshape) folds into a single `AsStrided` on the
//! underlying array, so chains like `x.transpose(&[])?.slice(..)?.flip(..)` cost one copy.

use crate::array::{Array, State};
use crate::dtype::promote;
use crate::error::{Error, Result};
use crate::primitive::{AsStrided, Concatenate, Full, Primitive, Reshape};
use crate::shape::{broadcast_shapes, contiguous_strides, normalize_axes, normalize_axis, numel};

pub use super::slice_arg::SliceArg;

/// Python's `slice(start, stop, step).indices(n)`: the first position and the length.
fn slice_indices(start: Option<isize>, stop: Option<isize>, step: isize, n: usize) -> (isize, usize) {
    let n = n as isize;
    let (lo, hi) = if step < 0 { (-1, n - 1) } else { (0, n) };
    let fix = |v: Option<isize>, default: isize| match v {
        None => default,
        Some(v) if v < 0 => (v + n).max(lo),
        Some(v) => v.min(hi),
    };
    let start = fix(start, if step < 0 { hi } else { lo });
    let stop = fix(stop, if step < 0 { lo } else { hi });
    // unsigned_abs: -isize::MIN overflows.
    let len = if step > 0 && start < stop {
        (stop - start - 1) as usize / step.unsigned_abs() + 1
    } else if step < 0 && stop < start {
        (start - stop - 1) as usize / step.unsigned_abs() + 1
    } else {
        0
    };
    (start, len)
}

/// A strided view of `base`'s contiguous data: `out[idx] = base[offset + sum(idx * strides)]`.
struct View {
    base: Array,
    shape: Vec<usize>,
    strides: Vec<isize>,
    offset: isize,
}

impl View {
    /// The view `a` is; looks through a pending `AsStrided` or `Reshape` so that views
    /// of views stay one node.
    fn of(a: &Array) -> View {
        let shape = a.shape().to_vec();
        if let State::Pending { op, inputs } = &*a.0.lock() {
            // Other primitives are not views: `a` itself is the base.
            if let Primitive::AsStrided(v) = op {
                return View { base: inputs[0].clone(), shape, strides: v.strides.clone(), offset: v.offset as isize };
            }
            // A reshape's input is contiguous with the same data.
            if let Primitive::Reshape(_) = op {
                let strides = contiguous_strides(&shape);
                return View { base: inputs[0].clone(), shape, strides, offset: 0 };
            }
        }
        View { base: a.clone(), strides: contiguous_strides(&shape), shape, offset: 0 }
    }

    fn permute(mut self, perm: &[usize]) -> View {
        self.shape = perm.iter().map(|&p| self.shape[p]).collect();
        self.strides = perm.iter().map(|&p| self.strides[p]).collect();
        self
    }

    /// Restricts `axis` to `len` positions from `start` by `step`.
    fn restrict(mut self, axis: usize, start: isize, len: usize, step: isize) -> View {
        if len > 0 {
            self.offset += start * self.strides[axis];
        }
        self.shape[axis] = len;
        // A step of at least the axis length leaves one position, whose stride never
        // multiplies anything but 0 (and step * stride could overflow).
        if len > 1 {
            self.strides[axis] *= step;
        }
        self
    }

    /// Inserts an axis of `size` that repeats the data (stride 0).
    fn insert_axis(mut self, axis: usize, size: usize) -> View {
        self.shape.insert(axis, size);
        self.strides.insert(axis, 0);
        self
    }

    fn build(self) -> Result<Array> {
        // An empty view reads nothing; its offset may point past the end.
        let offset = if numel(&self.shape) == 0 { 0 } else { self.offset };
        debug_assert!(offset >= 0, "a non-empty view starts inside its base");
        self.base.as_strided(self.shape, self.strides, offset as usize)
    }
}

impl Array {
    /// The same data in a new shape of the same size; one axis may be `-1` (inferred).
    pub fn reshape(&self, shape: &[isize]) -> Result<Array> {
        let mut out = Vec::with_capacity(shape.len());
        let mut infer = None;
        for (i, &d) in shape.iter().enumerate() {
            match d {
                -1 if infer.is_none() => {
                    infer = Some(i);
                    out.push(1);
                }
                -1 => return Err(Error::shape("reshape", format!("only one -1 is allowed, got {shape:?}"))),
                d if d < 0 => return Err(Error::shape("reshape", format!("negative size in {shape:?}"))),
                d => out.push(d as usize),
            }
        }
        let known = numel(&out);
        if let Some(i) = infer {
            if known == 0 || !self.size().is_multiple_of(known) {
                return Err(Error::shape(
                    "reshape",
                    format!("cannot infer -1: {:?} ({} elements) into {shape:?}", self.shape(), self.size()),
                ));
            }
            out[i] = self.size() / known;
        }
        if numel(&out) != self.size() {
            return Err(Error::shape(
                "reshape",
                format!("cannot reshape {:?} ({} elements) into {shape:?}", self.shape(), self.size()),
            ));
        }
        self.reshape_to(out)
    }

    /// Reshape to a shape already known to have the same size.
    pub(crate) fn reshape_to(&self, shape: Vec<usize>) -> Result<Array> {
        if shape == self.shape() {
            return Ok(self.clone());
        }
        Array::from_op(Reshape { shape }, [self.clone()])
    }

    /// A strided view of this array's contiguous data, materialised by the backend.
    pub(crate) fn as_strided(&self, shape: Vec<usize>, strides: Vec<isize>, offset: usize) -> Result<Array> {
        if shape == self.shape() && offset == 0 && strides == contiguous_strides(&shape) {
            return Ok(self.clone());
        }
        Array::from_op(AsStrided { shape, strides, offset }, [self.clone()])
    }

    /// Broadcasts to `shape` with NumPy's rules.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Array> {
        let out = broadcast_shapes("broadcast_to", self.shape(), shape)?;
        if out != shape {
            return Err(Error::shape("broadcast_to", format!("cannot broadcast {:?} to {shape:?}", self.shape())));
        }
        let mut v = View::of(self);
        let lead = shape.len() - self.ndim();
        for (i, &d) in shape.iter().enumerate() {
            if i < lead {
                v = v.insert_axis(i, d);
            } else if v.shape[i] != d {
                // A size-1 axis stretched: every position reads the one element.
                v.shape[i] = d;
                v.strides[i] = 0;
            }
        }
        v.build()
    }

    /// All elements in one axis, row-major (a 0-d array gives shape `[1]`).
    pub fn flatten(&self) -> Result<Array> {
        self.reshape_to(vec![self.size()])
    }

    /// Merges axes `start_axis..=end_axis` (negative counts from the end) into one, as
    /// MLX's `flatten(start_axis, end_axis)`. A 0-d array gives shape `[1]`.
    pub fn flatten_range(&self, start_axis: isize, end_axis: isize) -> Result<Array> {
        let nd = self.ndim().max(1);
        let s = normalize_axis("flatten", start_axis, nd)?;
        let e = normalize_axis("flatten", end_axis, nd)?;
        if s > e {
            return Err(Error::invalid(
                "flatten",
                format!("start_axis {start_axis} comes after end_axis {end_axis} for shape {:?}", self.shape()),
            ));
        }
        if self.ndim() == 0 {
            return self.reshape_to(vec![1]);
        }
        let sh = self.shape();
        let mut out = sh[..s].to_vec();
        out.push(numel(&sh[s..=e]));
        out.extend_from_slice(&sh[e + 1..]);
        self.reshape_to(out)
    }

    /// Permutes the axes: output axis `i` is input axis `axes[i]`. An empty slice
    /// reverses the axes (NumPy's default).
    pub fn transpose(&self, axes: &[isize]) -> Result<Array> {
        let nd = self.ndim();
        let perm: Vec<usize> = if axes.is_empty() {
            (0..nd).rev().collect()
        } else {
            if axes.len() != nd {
                return Err(Error::invalid(
                    "transpose",
                    format!("axes {axes:?} do not match an array of {nd} dimensions (shape {:?})", self.shape()),
                ));
            }
            let perm = axes.iter().map(|&a| normalize_axis("transpose", a, nd)).collect::<Result<Vec<_>>>()?;
            normalize_axes("transpose", axes, nd)?;
            perm
        };
        View::of(self).permute(&perm).build()
    }

    /// The axes reversed, as NumPy's `.T`: `transpose(&[])`. Arrays of rank below 2 are
    /// returned as they are.
    pub fn t(&self) -> Result<Array> {
        if self.ndim() < 2 {
            return Ok(self.clone());
        }
        self.transpose(&[])
    }

    /// Swaps two axes.
    pub fn swapaxes(&self, axis1: isize, axis2: isize) -> Result<Array> {
        let a = normalize_axis("swapaxes", axis1, self.ndim())?;
        let b = normalize_axis("swapaxes", axis2, self.ndim())?;
        let mut perm: Vec<usize> = (0..self.ndim()).collect();
        perm.swap(a, b);
        View::of(self).permute(&perm).build()
    }

    /// Inserts size-1 axes at `axes`, which index the output (of rank `ndim + axes.len()`).
    pub fn expand_dims(&self, axes: &[isize]) -> Result<Array> {
        let out_nd = self.ndim() + axes.len();
        let axes = normalize_axes("expand_dims", axes, out_nd)?;
        let mut shape = self.shape().to_vec();
        for &a in &axes {
            shape.insert(a, 1);
        }
        self.reshape_to(shape)
    }

    /// Removes size-1 axes: the named ones (an error if one is not size 1), or every
    /// size-1 axis when `axes` is empty.
    pub fn squeeze(&self, axes: &[isize]) -> Result<Array> {
        let sh = self.shape();
        let axes = if axes.is_empty() {
            (0..sh.len()).filter(|&i| sh[i] == 1).collect()
        } else {
            let ax = normalize_axes("squeeze", axes, sh.len())?;
            if let Some(&bad) = ax.iter().find(|&&a| sh[a] != 1) {
                return Err(Error::shape("squeeze", format!("axis {bad} of shape {sh:?} is not of size 1")));
            }
            ax
        };
        let shape = (0..sh.len()).filter(|i| !axes.contains(i)).map(|i| sh[i]).collect();
        self.reshape_to(shape)
    }

    /// Basic indexing, NumPy's `a[...]` with [`SliceArg`]s (usually written with
    /// [`s!`](crate::s)), with Python's semantics: negative positions count from the
    /// end, range bounds clamp, negative steps walk backwards, a zero step is an error,
    /// an index removes its axis, [`SliceArg::NewAxis`] inserts one of size 1, one
    /// [`SliceArg::Ellipsis`] stands for the axes not named, and axes after the last
    /// argument are taken whole. The result is a view (no copy until it is computed).
    ///
    /// ```
    /// use lazuli::{Array, SliceArg, s};
    /// let a = Array::from_slice(&[0i32, 1, 2, 3, 4, 5], &[2, 3])?;
    /// let b = a.slice(&[(..).into(), SliceArg::new(None, None, -2)])?;
    /// assert_eq!(b.to_vec::<i32>()?, vec![2, 0, 5, 3]);
    /// assert_eq!(a.slice(&s![.., ..;-2])?.to_vec::<i32>()?, vec![2, 0, 5, 3]);
    /// # Ok::<(), lazuli::Error>(())
    /// ```
    pub fn slice(&self, args: &[SliceArg]) -> Result<Array> {
        let sh = self.shape().to_vec();
        let consumed = args.iter().filter(|a| matches!(a, SliceArg::Index(_) | SliceArg::Range { .. })).count();
        if args.iter().filter(|a| matches!(a, SliceArg::Ellipsis)).count() > 1 {
            return Err(Error::invalid("slice", "an index can only have a single ellipsis ('...')"));
        }
        if consumed > sh.len() {
            return Err(Error::invalid(
                "slice",
                format!("{consumed} indices or ranges for an array of shape {sh:?} ({} dimensions)", sh.len()),
            ));
        }
        let v = View::of(self);
        let mut out = View { base: v.base.clone(), shape: Vec::new(), strides: Vec::new(), offset: v.offset };
        // Walk input axes (`ax`) and output axes together.
        let mut ax = 0;
        for arg in args {
            match *arg {
                SliceArg::Index(i) => {
                    let n = sh[ax];
                    if i < -(n as isize) || i >= n as isize {
                        return Err(Error::invalid(
                            "slice",
                            format!("index {i} is out of bounds for axis {ax} of shape {sh:?}"),
                        ));
                    }
                    let i = if i < 0 { i + n as isize } else { i };
                    out.offset += i * v.strides[ax];
                    ax += 1;
                }
                SliceArg::Range { start, stop, step } => {
                    if step == 0 {
                        return Err(Error::invalid("slice", format!("step is zero on axis {ax} of shape {sh:?}")));
                    }
                    let (first, len) = slice_indices(start, stop, step, sh[ax]);
                    out.shape.push(v.shape[ax]);
                    out.strides.push(v.strides[ax]);
                    let last = out.shape.len() - 1;
                    out = out.restrict(last, first, len, step);
                    ax += 1;
                }
                SliceArg::NewAxis => {
                    let at = out.shape.len();
                    out = out.insert_axis(at, 1);
                }
                SliceArg::Ellipsis => {
                    for _ in 0..sh.len() - consumed {
                        out.shape.push(v.shape[ax]);
                        out.strides.push(v.strides[ax]);
                        ax += 1;
                    }
                }
            }
        }
        out.shape.extend_from_slice(&v.shape[ax..]);
        out.strides.extend_from_slice(&v.strides[ax..]);
        out.build()
    }

    /// Reverses the order of elements along `axes` (every axis when `axes` is empty).
    pub fn flip(&self, axes: &[isize]) -> Result<Array> {
        let axes =
            if axes.is_empty() { (0..self.ndim()).collect() } else { normalize_axes("flip", axes, self.ndim())? };
        let mut v = View::of(self);
        for ax in axes {
            let n = v.shape[ax];
            v = v.restrict(ax, n as isize - 1, n, -1);
        }
        v.build()
    }

    /// Repeats each element `repeats` times along `axis`; with `None`, on the flattened
    /// array (NumPy's `repeat` with one count).
    pub fn repeat(&self, repeats: usize, axis: Option<isize>) -> Result<Array> {
        let (x, ax) = match axis {
            None => (self.flatten()?, 0),
            Some(a) => (self.clone(), normalize_axis("repeat", a, self.ndim())?),
        };
        let mut out = x.shape().to_vec();
        out[ax] = out[ax].checked_mul(repeats).ok_or_else(|| too_large("repeat", x.shape(), ax, repeats))?;
        View::of(&x).insert_axis(ax + 1, repeats).build()?.reshape_to(out)
    }

    /// Repeats the whole array `reps[i]` times along axis `i` (NumPy's `tile`: a shorter
    /// `reps` is padded with leading 1s, a longer one adds leading axes to the array).
    pub fn tile(&self, reps: &[usize]) -> Result<Array> {
        let nd = self.ndim().max(reps.len());
        let mut reps_full = vec![1; nd - reps.len()];
        reps_full.extend_from_slice(reps);
        let mut shape = vec![1; nd - self.ndim()];
        shape.extend_from_slice(self.shape());
        let x = self.reshape_to(shape.clone())?;
        // View [r0, d0, r1, d1, ...] with the r axes repeating, then merge pairs.
        let mut v = View::of(&x);
        for i in (0..nd).rev() {
            v = v.insert_axis(i, reps_full[i]);
        }
        let out = shape
            .iter()
            .zip(&reps_full)
            .enumerate()
            .map(|(i, (d, r))| d.checked_mul(*r).ok_or_else(|| too_large("tile", &shape, i, *r)))
            .collect::<Result<Vec<_>>>()?;
        crate::shape::check_size("tile", &out, x.dtype())?;
        v.build()?.reshape_to(out)
    }

    /// Pads with `value` (cast to the dtype): `pad_width[i] = (before, after)` for axis
    /// `i`; a single pair applies to every axis.
    pub fn pad(&self, pad_width: &[(usize, usize)], value: f64) -> Result<Array> {
        let nd = self.ndim();
        let widths: Vec<(usize, usize)> = match pad_width.len() {
            1 => vec![pad_width[0]; nd],
            n if n == nd => pad_width.to_vec(),
            n => {
                return Err(Error::shape(
                    "pad",
                    if nd == 1 {
                        format!("{n} pad widths for an array of shape {:?} (give 1)", self.shape())
                    } else {
                        format!("{n} pad widths for an array of shape {:?} (give 1 or {nd})", self.shape())
                    },
                ));
            }
        };
        let mut padded = self.shape().to_vec();
        for (d, &(before, after)) in padded.iter_mut().zip(&widths) {
            *d = d.checked_add(before).and_then(|d| d.checked_add(after)).ok_or_else(|| {
                Error::shape("pad", format!("padding {widths:?} makes shape {:?} too large", self.shape()))
            })?;
        }
        crate::shape::check_size("pad", &padded, self.dtype())?;
        let mut x = self.clone();
        for (ax, &(before, after)) in widths.iter().enumerate() {
            if before == 0 && after == 0 {
                continue;
            }
            let block = |n: usize| -> Result<Array> {
                let mut s = x.shape().to_vec();
                s[ax] = n;
                Array::from_op(Full { value, shape: s, dtype: x.dtype() }, [])
            };
            let (b, a) = (block(before)?, block(after)?);
            x = concatenate(&[&b, &x, &a], ax as isize)?;
        }
        Ok(x)
    }
}

/// The error for a repeat/tile count that makes axis `axis` of `shape` overflow.
fn too_large(op: &'static str, shape: &[usize], axis: usize, times: usize) -> Error {
    Error::shape(op, format!("repeating axis {axis} of shape {shape:?} {times} times overflows its length"))
}

/// Joins arrays along an existing axis. Dtypes are promoted; ranks must match and shapes
/// must be equal except along `axis`.
pub fn concatenate(arrays: &[&Array], axis: isize) -> Result<Array> {
    let Some(first) = arrays.first() else {
        return Err(Error::invalid("concatenate", "needs at least one array"));
    };
    let nd = first.ndim();
    if nd == 0 {
        return Err(Error::shape("concatenate", "0-d arrays cannot be concatenated"));
    }
    let ax = normalize_axis("concatenate", axis, nd)?;
    let mut dtype = first.dtype();
    let mut out = first.shape().to_vec();
    out[ax] = 0;
    for a in arrays {
        let same = a.ndim() == nd && (0..nd).all(|i| i == ax || a.shape()[i] == first.shape()[i]);
        if !same {
            return Err(Error::shape(
                "concatenate",
                format!("shapes {:?} and {:?} differ outside axis {axis}", first.shape(), a.shape()),
            ));
        }
        out[ax] = out[ax]
            .checked_add(a.shape()[ax])
            .ok_or_else(|| Error::shape("concatenate", format!("the joined length of axis {axis} overflows")))?;
        dtype = promote(dtype, a.dtype());
    }
    // Empty pieces add nothing; kernels never see them.
    let parts: Vec<Array> = arrays.iter().filter(|a| a.size() > 0).map(|a| a.astype(dtype)).collect::<Result<_>>()?;
    match parts.len() {
        0 => Array::from_op(Full { value: 0.0, shape: out, dtype }, []),
        1 => Ok(parts.into_iter().next().expect("one part")),
        _ => Array::from_op(Concatenate { axis: ax }, parts),
    }
}

/// Joins arrays of one shape along a new axis (`axis` indexes the output).
pub fn stack(arrays: &[&Array], axis: isize) -> Result<Array> {
    let Some(first) = arrays.first() else {
        return Err(Error::invalid("stack", "needs at least one array"));
    };
    if let Some(bad) = arrays.iter().find(|a| a.shape() != first.shape()) {
        return Err(Error::shape(
            "stack",
            format!("all arrays must have one shape, got {:?} and {:?}", first.shape(), bad.shape()),
        ));
    }
    let ax = normalize_axis("stack", axis, first.ndim() + 1)?;
    let expanded: Vec<Array> = arrays.iter().map(|a| a.expand_dims(&[ax as isize])).collect::<Result<_>>()?;
    let refs: Vec<&Array> = expanded.iter().collect();
    concatenate(&refs, ax as isize)
}

/// Splits into `sections` equal parts along `axis` (an error if the axis does not
/// divide evenly, as NumPy's `split`). See [`split_at`] for split positions.
pub fn split(a: &Array, sections: usize, axis: isize) -> Result<Vec<Array>> {
    let ax = normalize_axis("split", axis, a.ndim())?;
    let n = a.shape()[ax];
    if sections == 0 || !n.is_multiple_of(sections) {
        return Err(Error::shape(
            "split",
            format!("axis {axis} of shape {:?} does not split into {sections} equal parts", a.shape()),
        ));
    }
    let step = n / sections;
    // Parts of an empty axis can be as many as asked: refuse a count whose handles
    // cannot even be allocated instead of aborting.
    let mut cuts: Vec<usize> = Vec::new();
    cuts.try_reserve_exact(sections)
        .map_err(|_| Error::out_of_memory(format!("split into {sections} parts"), sections as u64 * 8, None))?;
    cuts.extend((1..sections).map(|i| i * step));
    split_at(a, &cuts, axis)
}

/// Splits along `axis` before each position in `indices`: `[2, 5]` gives `a[:2]`,
/// `a[2:5]`, `a[5:]` (NumPy's `split` with indices; positions past the end give empty
/// parts).
pub fn split_at(a: &Array, indices: &[usize], axis: isize) -> Result<Vec<Array>> {
    let ax = normalize_axis("split", axis, a.ndim())?;
    let mut bounds = vec![0usize];
    bounds.extend_from_slice(indices);
    bounds.push(usize::MAX);
    let mut out = Vec::new();
    out.try_reserve_exact(bounds.len() - 1).map_err(|_| {
        Error::out_of_memory(
            format!("split into {} parts", bounds.len() - 1),
            ((bounds.len() - 1) * std::mem::size_of::<Array>()) as u64,
            None,
        )
    })?;
    for w in bounds.windows(2) {
        let clamp = |x: usize| x.min(a.shape()[ax]) as isize;
        let mut args = vec![SliceArg::all(); ax + 1];
        args[ax] = SliceArg::new(Some(clamp(w[0])), Some(clamp(w[1])), 1);
        out.push(a.slice(&args)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_of_views_fold_into_one_node() {
        let v: Vec<i32> = (0..24).collect();
        let a = Array::from_slice(&v, &[2, 3, 4]).unwrap();
        let c = a.transpose(&[]).unwrap().slice(&[(1..).into()]).unwrap().flip(&[0]).unwrap();
        match &*c.0.lock() {
            State::Pending { op: Primitive::AsStrided(_), inputs } => assert_eq!(inputs[0].ptr(), a.ptr()),
            State::Pending { .. } | State::Running { .. } | State::Ready { .. } | State::Failed(_) => {
                panic!("expected one as_strided node on the source")
            }
        }
        // Undoing a view gives the source itself.
        assert_eq!(a.transpose(&[]).unwrap().transpose(&[]).unwrap().ptr(), a.ptr());
        assert_eq!(a.flip(&[1]).unwrap().flip(&[1]).unwrap().ptr(), a.ptr());
    }
}
