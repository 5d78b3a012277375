//! Indexing ops against values computed with NumPy (and PyTorch's scatter rules).

use lazuli::{Array, DType, Error};

fn a34() -> Array {
    let v: Vec<i32> = (0..12).map(|x| x * 10).collect();
    Array::from_slice(&v, &[3, 4]).unwrap()
}

fn ints(v: &[i32], shape: &[usize]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

#[track_caller]
fn check(x: lazuli::Result<Array>, shape: &[usize], vals: &[i32]) {
    let x = x.unwrap();
    assert_eq!(x.shape(), shape);
    assert_eq!(x.to_vec::<i32>().unwrap(), vals);
}

#[test]
fn take_along_one_axis() {
    let a = a34();
    check(
        a.take(&ints(&[0, 3, -1, 1], &[2, 2]), Some(1)),
        &[3, 2, 2],
        &[0, 30, 30, 10, 40, 70, 70, 50, 80, 110, 110, 90],
    );
    check(a.take(&ints(&[2, 0], &[2]), Some(0)), &[2, 4], &[80, 90, 100, 110, 0, 10, 20, 30]);
    check(a.take(&ints(&[2, 0], &[2]), Some(-2)), &[2, 4], &[80, 90, 100, 110, 0, 10, 20, 30]);
    check(a.take(&ints(&[5, 11], &[2, 1]), None), &[2, 1], &[50, 110]);
    check(a.take(&Array::scalar(1i32).unwrap(), Some(1)), &[3], &[10, 50, 90]);
    // Out-of-range indices clamp.
    check(a.take(&ints(&[7, -9], &[2]), Some(1)), &[3, 2], &[30, 0, 70, 40, 110, 80]);
    // uint32 and int64 indices.
    let u = Array::from_slice(&[3u32, 0], &[2]).unwrap();
    check(a.take(&u, Some(1)), &[3, 2], &[30, 0, 70, 40, 110, 80]);
    let l = Array::from_slice(&[1i64], &[1]).unwrap();
    check(a.take(&l, Some(0)), &[1, 4], &[40, 50, 60, 70]);
    // Empty indices give an empty result.
    check(a.take(&ints(&[], &[0]), Some(1)), &[3, 0], &[]);
    // Errors: float indices, bad axis, taking from an empty axis.
    let f = Array::from_slice(&[0.0f32], &[1]).unwrap();
    assert!(matches!(a.take(&f, Some(0)), Err(Error::DType { .. })));
    let b = Array::from_slice(&[true], &[1]).unwrap();
    assert!(matches!(a.take(&b, None), Err(Error::DType { .. })));
    assert!(matches!(a.take(&ints(&[0], &[1]), Some(2)), Err(Error::Axis { .. })));
    let e = Array::from_slice::<i32>(&[], &[3, 0]).unwrap();
    assert!(e.take(&ints(&[0], &[1]), Some(1)).is_err());
}

#[test]
fn take_along_axis_values() {
    let a = a34();
    check(a.take_along_axis(&ints(&[0, 2, 1, 1, 2, 2, 0, -1], &[2, 4]), 0), &[2, 4], &[0, 90, 60, 70, 80, 90, 20, 110]);
    check(a.take_along_axis(&ints(&[3, 0, 1], &[3, 1]), 1), &[3, 1], &[30, 40, 90]);
    check(a.take_along_axis(&ints(&[3, 0, 1], &[3, 1]), -1), &[3, 1], &[30, 40, 90]);
    check(a.take_along_axis(&ints(&[1, 0, 2, 2], &[1, 4]), 0), &[1, 4], &[40, 10, 100, 110]);
    // The source broadcasts too.
    let s = ints(&[5, 6, 7], &[3, 1]);
    check(s.take_along_axis(&ints(&[0, 0], &[1, 2]), 1), &[3, 2], &[5, 5, 6, 6, 7, 7]);
    // Errors: rank mismatch, shapes that do not broadcast, bad dtype, bad axis.
    assert!(matches!(a.take_along_axis(&ints(&[0, 1], &[2]), 0), Err(Error::Shape { .. })));
    assert!(matches!(a.take_along_axis(&ints(&[0, 1, 0, 1, 0, 1], &[2, 3]), 0), Err(Error::Shape { .. })));
    let f = Array::from_slice(&[0.0f32; 4], &[1, 4]).unwrap();
    assert!(matches!(a.take_along_axis(&f, 0), Err(Error::DType { .. })));
    assert!(matches!(a.take_along_axis(&ints(&[0; 4], &[1, 4]), 2), Err(Error::Axis { .. })));
}

#[test]
fn scatter_assign_and_add() {
    let z = ints(&[0; 12], &[3, 4]);
    let idx = ints(&[0, 1, 2, 0, 2, 0, 1, 1], &[2, 4]);
    let upd = ints(&[1, 2, 3, 4, 5, 6, 7, 8], &[2, 4]);
    let expect = [1, 6, 0, 4, 0, 2, 7, 8, 5, 0, 3, 0];
    check(z.scatter(&idx, &upd, 0), &[3, 4], &expect);
    check(z.scatter_add(&idx, &upd, 0), &[3, 4], &expect);
    // Repeated indices accumulate; -1 counts from the end.
    let ones = ints(&[1; 12], &[3, 4]);
    let idx = ints(&[0, 0, 1, 3, 3, 3, -1, 0, 2], &[3, 3]);
    let upd = ints(&[1, 2, 3, 4, 5, 6, 7, 8, 9], &[3, 3]);
    check(ones.scatter_add(&idx, &upd, 1), &[3, 4], &[4, 4, 1, 1, 1, 1, 1, 16, 9, 1, 10, 8]);
    check(ones.scatter_add(&idx, &upd, -1), &[3, 4], &[4, 4, 1, 1, 1, 1, 1, 16, 9, 1, 10, 8]);
    // A scalar update broadcasts; out-of-range indices are dropped.
    let idx = ints(&[1, 9, 0, 0], &[1, 4]);
    check(z.scatter(&idx, &Array::scalar(7i32).unwrap(), 0), &[3, 4], &[0, 0, 7, 7, 7, 0, 0, 0, 0, 0, 0, 0]);
    // Updates are cast to the destination dtype.
    let zf = Array::from_slice(&[0.5f32; 4], &[4]).unwrap();
    let out = zf.scatter_add(&ints(&[2, 2], &[2]), &ints(&[1, 2], &[2]), 0).unwrap();
    assert_eq!(out.dtype(), DType::F32);
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![0.5, 0.5, 3.5, 0.5]);
    // Errors: index shape, updates shape, dtype, axis.
    assert!(matches!(z.scatter(&ints(&[0; 6], &[2, 3]), &ints(&[0; 6], &[2, 3]), 0), Err(Error::Shape { .. })));
    assert!(matches!(z.scatter(&ints(&[0; 4], &[4]), &ints(&[0; 4], &[4]), 0), Err(Error::Shape { .. })));
    assert!(matches!(z.scatter_add(&ints(&[0; 8], &[2, 4]), &ints(&[0; 3], &[3]), 0), Err(Error::Shape { .. })));
    let f = Array::from_slice(&[0.0f32; 4], &[1, 4]).unwrap();
    assert!(matches!(z.scatter(&f, &f, 0), Err(Error::DType { .. })));
    assert!(matches!(z.scatter(&ints(&[0; 4], &[1, 4]), &ints(&[0; 4], &[1, 4]), 2), Err(Error::Axis { .. })));
}

#[test]
fn triangles() {
    let m = ints(&(1..13).collect::<Vec<_>>(), &[3, 4]);
    check(m.triu(0), &[3, 4], &[1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12]);
    check(m.triu(1), &[3, 4], &[0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12]);
    check(m.triu(-1), &[3, 4], &[1, 2, 3, 4, 5, 6, 7, 8, 0, 10, 11, 12]);
    check(m.tril(0), &[3, 4], &[1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0]);
    check(m.tril(-1), &[3, 4], &[0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0]);
    check(m.tril(2), &[3, 4], &[1, 2, 3, 0, 5, 6, 7, 8, 9, 10, 11, 12]);
    check(m.triu(isize::MAX), &[3, 4], &[0; 12]);
    check(m.tril(isize::MIN), &[3, 4], &[0; 12]);
    let b = ints(&(1..9).collect::<Vec<_>>(), &[2, 2, 2]);
    check(b.triu(0), &[2, 2, 2], &[1, 2, 0, 4, 5, 6, 0, 8]);
    check(b.tril(0), &[2, 2, 2], &[1, 0, 3, 4, 5, 0, 7, 8]);
    let f = Array::from_slice(&[1.5f32, 2.5, 3.5, 4.5], &[2, 2]).unwrap();
    assert_eq!(f.tril(0).unwrap().to_vec::<f32>().unwrap(), vec![1.5, 0.0, 3.5, 4.5]);
    // A 1-D array is every row of an n x n matrix (NumPy).
    let v = ints(&[1, 2, 3], &[3]);
    check(v.triu(1), &[3, 3], &[0, 2, 3, 0, 0, 3, 0, 0, 0]);
    assert!(matches!(Array::scalar(1i32).unwrap().tril(0), Err(Error::Shape { .. })));
}
