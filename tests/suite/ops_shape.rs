//! Shape ops against values computed with NumPy.

use lazuli::{Array, DType, Error, SliceArg, concatenate, split, split_at, stack};

fn a24() -> Array {
    let v: Vec<i32> = (0..24).collect();
    Array::from_slice(&v, &[2, 3, 4]).unwrap()
}

fn b22() -> Array {
    Array::from_slice(&[1i32, 2, 3, 4], &[2, 2]).unwrap()
}

#[track_caller]
fn check(x: lazuli::Result<Array>, shape: &[usize], vals: &[i32]) {
    let x = x.unwrap();
    assert_eq!(x.shape(), shape);
    assert_eq!(x.to_vec::<i32>().unwrap(), vals);
}

fn r(start: Option<isize>, stop: Option<isize>, step: isize) -> SliceArg {
    SliceArg::new(start, stop, step)
}

#[test]
fn reshape_and_flatten() {
    let a = a24();
    check(a.reshape(&[4, -1]), &[4, 6], &(0..24).collect::<Vec<_>>());
    check(a.flatten(), &[24], &(0..24).collect::<Vec<_>>());
    assert_eq!(a.flatten_range(1, 2).unwrap().shape(), [2, 12]);
    assert_eq!(a.flatten_range(0, -2).unwrap().shape(), [6, 4]);
    assert_eq!(a.flatten_range(1, 1).unwrap().shape(), [2, 3, 4]);
    let s = Array::scalar(7i32).unwrap();
    check(s.flatten(), &[1], &[7]);
    check(s.flatten_range(0, -1), &[1], &[7]);
    assert!(a.flatten_range(2, 1).is_err());
    assert!(matches!(a.flatten_range(0, 3), Err(Error::Axis { .. })));
    assert!(a.reshape(&[5, -1]).is_err());
    assert!(a.reshape(&[-1, -1]).is_err());
}

#[test]
fn transpose_and_swapaxes() {
    let a = a24();
    let t = [0, 12, 4, 16, 8, 20, 1, 13, 5, 17, 9, 21, 2, 14, 6, 18, 10, 22, 3, 15, 7, 19, 11, 23];
    check(a.transpose(&[]), &[4, 3, 2], &t);
    check(a.transpose(&[2, 1, 0]), &[4, 3, 2], &t);
    check(a.swapaxes(0, -1), &[4, 3, 2], &t);
    check(
        a.transpose(&[1, 0, 2]),
        &[3, 2, 4],
        &[0, 1, 2, 3, 12, 13, 14, 15, 4, 5, 6, 7, 16, 17, 18, 19, 8, 9, 10, 11, 20, 21, 22, 23],
    );
    check(
        a.transpose(&[-1, 0, 1]),
        &[4, 2, 3],
        &[0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23],
    );
    // Transposing twice gives the original back.
    check(a.transpose(&[]).unwrap().transpose(&[]), &[2, 3, 4], &(0..24).collect::<Vec<_>>());
    assert!(a.transpose(&[0, 0, 1]).is_err());
    assert!(a.transpose(&[0, 1]).is_err());
    assert!(matches!(a.transpose(&[0, 1, 3]), Err(Error::Axis { .. })));
    assert!(matches!(a.swapaxes(0, 3), Err(Error::Axis { .. })));
    assert!(a.swapaxes(-4, 0).is_err());
}

#[test]
fn expand_and_squeeze() {
    let b = b22();
    check(b.expand_dims(&[0, -1]), &[1, 2, 2, 1], &[1, 2, 3, 4]);
    check(b.expand_dims(&[1]), &[2, 1, 2], &[1, 2, 3, 4]);
    check(b.expand_dims(&[]), &[2, 2], &[1, 2, 3, 4]);
    assert!(b.expand_dims(&[0, 0]).is_err());
    assert!(matches!(b.expand_dims(&[3]), Err(Error::Axis { .. })));
    let c = b.reshape(&[1, 2, 1, 2, 1]).unwrap();
    check(c.squeeze(&[]), &[2, 2], &[1, 2, 3, 4]);
    check(c.squeeze(&[2]), &[1, 2, 2, 1], &[1, 2, 3, 4]);
    check(c.squeeze(&[0, -1]), &[2, 1, 2], &[1, 2, 3, 4]);
    assert!(matches!(c.squeeze(&[1]), Err(Error::Shape { .. })));
    assert!(matches!(c.squeeze(&[5]), Err(Error::Axis { .. })));
    assert!(c.squeeze(&[0, 0]).is_err());
}

#[test]
fn slices_follow_python() {
    let a = a24();
    check(a.slice(&[1.into(), r(None, None, -1), (1..3).into()]), &[3, 2], &[21, 22, 17, 18, 13, 14]);
    check(a.slice(&[(..).into(), (-2..).into(), r(None, None, -3)]), &[2, 2, 2], &[7, 4, 11, 8, 19, 16, 23, 20]);
    check(a.slice(&[(-1..).into(), r(Some(10), Some(-10), -2)]), &[1, 2, 4], &[20, 21, 22, 23, 12, 13, 14, 15]);
    check(a.slice(&[(..).into(), (5..10).into()]), &[2, 0, 4], &[]);
    check(a.slice(&[0.into(), 1.into(), r(Some(-1), Some(-5), -1)]), &[4], &[7, 6, 5, 4]);
    check(
        a.slice(&[r(None, None, -1)]),
        &[2, 3, 4],
        &[12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
    );
    check(a.slice(&[(..).into(), 1.into()]), &[2, 4], &[4, 5, 6, 7, 16, 17, 18, 19]);
    check(a.slice(&[(..2).into(), (-1).into(), (-1).into()]), &[2], &[11, 23]);
    check(a.slice(&[]), &[2, 3, 4], &(0..24).collect::<Vec<_>>());
    // Errors: zero step, too many arguments, index out of range.
    assert!(matches!(a.slice(&[r(None, None, 0)]), Err(Error::Invalid { .. })));
    assert!(a.slice(&[0.into(), 0.into(), 0.into(), 0.into()]).is_err());
    assert!(a.slice(&[2.into()]).is_err());
    assert!(a.slice(&[(-3).into()]).is_err());
}

#[test]
fn views_of_views_compose() {
    let a = a24();
    let c = a.transpose(&[]).unwrap().slice(&[(1..).into(), r(None, None, 2)]).unwrap().flip(&[0]).unwrap();
    check(Ok(c), &[3, 2, 2], &[3, 15, 11, 23, 2, 14, 10, 22, 1, 13, 9, 21]);
    let d = a.swapaxes(0, 1).unwrap().slice(&[r(None, None, 2), (..).into(), 1.into()]).unwrap();
    check(Ok(d), &[2, 2], &[1, 13, 9, 21]);
    let e = a.reshape(&[6, 4]).unwrap().slice(&[(1..3).into()]).unwrap().transpose(&[]).unwrap();
    check(Ok(e), &[4, 2], &[4, 8, 5, 9, 6, 10, 7, 11]);
}

#[test]
fn flip_axes() {
    let a = a24();
    check(
        a.flip(&[0]),
        &[2, 3, 4],
        &[12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
    );
    check(a.flip(&[]), &[2, 3, 4], &(0..24).rev().collect::<Vec<_>>());
    check(
        a.flip(&[-1, 1]),
        &[2, 3, 4],
        &[11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12],
    );
    assert!(matches!(a.flip(&[3]), Err(Error::Axis { .. })));
    assert!(a.flip(&[1, 1]).is_err());
}

#[test]
fn broadcast() {
    let c = Array::from_slice(&[1i32, 2, 3], &[3, 1]).unwrap();
    check(c.broadcast_to(&[2, 3, 2]), &[2, 3, 2], &[1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3]);
    let row = Array::from_slice(&[1i32, 2], &[2]).unwrap();
    check(row.broadcast_to(&[2, 2]), &[2, 2], &[1, 2, 1, 2]);
    // Broadcast of a transposed view.
    check(b22().transpose(&[]).unwrap().broadcast_to(&[2, 2, 2]), &[2, 2, 2], &[1, 3, 2, 4, 1, 3, 2, 4]);
    assert!(matches!(row.broadcast_to(&[3]), Err(Error::Shape { .. })));
    assert!(c.broadcast_to(&[3]).is_err());
}

#[test]
fn repeat_and_tile() {
    let b = b22();
    check(b.repeat(2, None), &[8], &[1, 1, 2, 2, 3, 3, 4, 4]);
    check(b.repeat(3, Some(1)), &[2, 6], &[1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4]);
    check(b.repeat(2, Some(-2)), &[4, 2], &[1, 2, 1, 2, 3, 4, 3, 4]);
    check(b.repeat(0, Some(0)), &[0, 2], &[]);
    assert!(matches!(b.repeat(2, Some(2)), Err(Error::Axis { .. })));
    check(b.tile(&[2]), &[2, 4], &[1, 2, 1, 2, 3, 4, 3, 4]);
    check(b.tile(&[2, 1, 2]), &[2, 2, 4], &[1, 2, 1, 2, 3, 4, 3, 4, 1, 2, 1, 2, 3, 4, 3, 4]);
    check(b.tile(&[]), &[2, 2], &[1, 2, 3, 4]);
    let v = Array::from_slice(&[5i32, 6], &[2]).unwrap();
    check(v.tile(&[2, 2]), &[2, 4], &[5, 6, 5, 6, 5, 6, 5, 6]);
    check(v.tile(&[0]), &[0], &[]);
}

#[test]
fn pad_blocks() {
    let b = b22();
    check(b.pad(&[(1, 0), (0, 2)], 9.0), &[3, 4], &[9, 9, 9, 9, 1, 2, 9, 9, 3, 4, 9, 9]);
    check(b.pad(&[(1, 1)], 0.0), &[4, 4], &[0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0]);
    check(b.pad(&[(0, 0), (0, 0)], 5.0), &[2, 2], &[1, 2, 3, 4]);
    let f = Array::from_slice(&[1.5f32], &[1]).unwrap().pad(&[(2, 1)], -0.5).unwrap();
    assert_eq!(f.to_vec::<f32>().unwrap(), vec![-0.5, -0.5, 1.5, -0.5]);
    assert!(matches!(b.pad(&[(1, 1), (1, 1), (1, 1)], 0.0), Err(Error::Shape { .. })));
    assert!(b.pad(&[], 0.0).is_err());
}

#[test]
fn concatenate_arrays() {
    let b = b22();
    let c = Array::from_slice(&[5i32, 6], &[1, 2]).unwrap();
    check(concatenate(&[&b, &c], 0), &[3, 2], &[1, 2, 3, 4, 5, 6]);
    let d = Array::from_slice(&[7i32, 8], &[2, 1]).unwrap();
    check(concatenate(&[&b, &d, &b], -1), &[2, 5], &[1, 2, 7, 1, 2, 3, 4, 8, 3, 4]);
    check(concatenate(&[&b], 1), &[2, 2], &[1, 2, 3, 4]);
    let empty = Array::from_slice::<i32>(&[], &[0, 2]).unwrap();
    check(concatenate(&[&empty, &c, &empty], 0), &[1, 2], &[5, 6]);
    check(concatenate(&[&empty, &empty], 0), &[0, 2], &[]);
    // Promotion: int32 with float32 gives float32.
    let f = Array::from_slice(&[0.5f32, 1.5], &[1, 2]).unwrap();
    let m = concatenate(&[&b, &f], 0).unwrap();
    assert_eq!(m.dtype(), DType::F32);
    assert_eq!(m.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0, 0.5, 1.5]);
    // Errors.
    assert!(matches!(concatenate(&[&b, &c], 1), Err(Error::Shape { .. })));
    let v = Array::from_slice(&[1i32, 2], &[2]).unwrap();
    assert!(matches!(concatenate(&[&b, &v], 0), Err(Error::Shape { .. })));
    assert!(concatenate(&[], 0).is_err());
    assert!(matches!(concatenate(&[&b, &b], 2), Err(Error::Axis { .. })));
    let s = Array::scalar(1i32).unwrap();
    assert!(concatenate(&[&s, &s], 0).is_err());
}

#[test]
fn stack_arrays() {
    let x = Array::from_slice(&[1i32, 2], &[2]).unwrap();
    let y = Array::from_slice(&[3i32, 4], &[2]).unwrap();
    check(stack(&[&x, &y], 0), &[2, 2], &[1, 2, 3, 4]);
    check(stack(&[&x, &y], 1), &[2, 2], &[1, 3, 2, 4]);
    check(stack(&[&x, &y, &x], -1), &[2, 3], &[1, 3, 1, 2, 4, 2]);
    let s = Array::scalar(9i32).unwrap();
    check(stack(&[&s, &s], 0), &[2], &[9, 9]);
    let z = Array::from_slice(&[1i32, 2, 3], &[3]).unwrap();
    assert!(matches!(stack(&[&x, &z], 0), Err(Error::Shape { .. })));
    assert!(stack(&[], 0).is_err());
    assert!(matches!(stack(&[&x, &y], 2), Err(Error::Axis { .. })));
}

#[test]
fn split_parts() {
    let v = Array::from_slice(&(0..6).collect::<Vec<i32>>(), &[6]).unwrap();
    let parts = split(&v, 3, 0).unwrap();
    assert_eq!(parts.len(), 3);
    check(Ok(parts[0].clone()), &[2], &[0, 1]);
    check(Ok(parts[2].clone()), &[2], &[4, 5]);
    assert!(matches!(split(&v, 4, 0), Err(Error::Shape { .. })));
    assert!(split(&v, 0, 0).is_err());
    assert!(matches!(split(&v, 2, 1), Err(Error::Axis { .. })));
    let w = Array::from_slice(&(0..8).collect::<Vec<i32>>(), &[8]).unwrap();
    let p = split_at(&w, &[2, 5], 0).unwrap();
    check(Ok(p[0].clone()), &[2], &[0, 1]);
    check(Ok(p[1].clone()), &[3], &[2, 3, 4]);
    check(Ok(p[2].clone()), &[3], &[5, 6, 7]);
    let p = split_at(&w, &[3, 10], -1).unwrap();
    assert_eq!(p.len(), 3);
    check(Ok(p[1].clone()), &[5], &[3, 4, 5, 6, 7]);
    check(Ok(p[2].clone()), &[0], &[]);
    let m = a24();
    let q = split_at(&m, &[1], 1).unwrap();
    check(Ok(q[0].clone()), &[2, 1, 4], &[0, 1, 2, 3, 12, 13, 14, 15]);
    assert_eq!(q[1].shape(), [2, 2, 4]);
    let q = split(&m, 2, -1).unwrap();
    check(Ok(q[1].clone()), &[2, 3, 2], &[2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23]);
    assert!(matches!(split_at(&m, &[1], 3), Err(Error::Axis { .. })));
}
