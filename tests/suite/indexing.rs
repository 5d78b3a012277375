//! Indexing ergonomics: `s![]` slicing, `masked_select`, `at(..).set/add/mul`,
//! `take_with_mode`, on every device. Expected values are NumPy's, printed by
//! `indexing_cases.py` beside this file (`python3 tests/suite/indexing_cases.py`).

use lazuli::{Array, Error, IndexMode, NewAxis, Result, SliceArg, s};

use crate::common;

fn check(got: &Array, shape: &[usize], want: &[f32], what: &str) {
    assert_eq!(got.shape(), shape, "shape of {what}");
    assert_eq!(got.to_vec::<f32>().unwrap(), want, "values of {what}");
}

fn arange(n: usize, shape: &[usize]) -> Result<Array> {
    Array::from_slice(&(0..n).map(|i| i as f32).collect::<Vec<_>>(), shape)
}

#[test]
fn s_macro_slices_like_numpy() {
    for d in common::devices() {
        common::on(d, || {
            let a = arange(24, &[2, 3, 4])?;
            check(
                &a.slice(&s![1])?,
                &[3, 4],
                &[12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0],
                "a[1]",
            );
            check(&a.slice(&s![-1, 1.., ..;-2])?, &[2, 2], &[19.0, 17.0, 23.0, 21.0], "a[-1, 1:, ::-2]");
            check(
                &a.slice(&s![.., ..-1, 1..=2])?,
                &[2, 2, 2],
                &[1.0, 2.0, 5.0, 6.0, 13.0, 14.0, 17.0, 18.0],
                "a[:, :-1, 1:3]",
            );
            check(&a.slice(&s![..., 0])?, &[2, 3], &[0.0, 4.0, 8.0, 12.0, 16.0, 20.0], "a[..., 0]");
            check(
                &a.slice(&s![NewAxis, .., NewAxis, 2])?,
                &[1, 2, 1, 4],
                &[8.0, 9.0, 10.0, 11.0, 20.0, 21.0, 22.0, 23.0],
                "a[None, :, None, 2]",
            );
            check(
                &a.slice(&s![0, ..., NewAxis])?,
                &[3, 4, 1],
                &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0],
                "a[0, ..., None]",
            );
            check(
                &a.slice(&s![.., 0..3;2, 3..0;-1])?,
                &[2, 2, 3],
                &[3.0, 2.0, 1.0, 11.0, 10.0, 9.0, 15.0, 14.0, 13.0, 23.0, 22.0, 21.0],
                "a[:, 0:3:2, 3:0:-1]",
            );
            check(
                &a.slice(&s![..])?,
                &[2, 3, 4],
                &[
                    0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0,
                    18.0, 19.0, 20.0, 21.0, 22.0, 23.0,
                ],
                "a[:]",
            );
            check(&a.slice(&s![1, 2, 3])?, &[], &[23.0], "a[1, 2, 3]");
            check(&a.slice(&s![5..])?, &[0, 3, 4], &[], "a[5:]");
            check(
                &a.slice(&s![..;-1, -2..;-1])?,
                &[2, 2, 4],
                &[16.0, 17.0, 18.0, 19.0, 12.0, 13.0, 14.0, 15.0, 4.0, 5.0, 6.0, 7.0, 0.0, 1.0, 2.0, 3.0],
                "a[::-1, -2::-1]",
            );
            check(
                &a.slice(&s![..., ..=-1])?,
                &[2, 3, 4],
                &[
                    0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0,
                    18.0, 19.0, 20.0, 21.0, 22.0, 23.0,
                ],
                "a[..., :]",
            );
            // Variables of any integer type, and NewAxis as a value.
            let (k, m): (usize, i64) = (1, -1);
            check(
                &a.slice(&s![k.., ..m, NewAxis])?,
                &[1, 2, 1, 4],
                &[12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0],
                "a[1:, :-1, None]",
            );
            assert_eq!(
                s![.., 1..8;2, NewAxis, ..., -1],
                vec![
                    SliceArg::all(),
                    SliceArg::new(Some(1), Some(8), 2),
                    SliceArg::NewAxis,
                    SliceArg::Ellipsis,
                    SliceArg::Index(-1),
                ]
            );
            assert_eq!(SliceArg::from(NewAxis), SliceArg::NewAxis);
            Ok(())
        })
        .unwrap();
    }
}

#[test]
fn bad_slices_are_errors() {
    let a = arange(24, &[2, 3, 4]).unwrap();
    for (what, args) in [
        ("two ellipses", s![..., 1, ...]),
        ("more indices than axes", s![0, 0, 0, 0]),
        ("zero step", s![.., ..;0]),
        ("index out of range", s![2]),
        ("negative index out of range", s![.., -4]),
    ] {
        assert!(matches!(a.slice(&args), Err(Error::Invalid { .. })), "{what}");
    }
    // NewAxis and an ellipsis consume no axis: they fit any rank.
    assert_eq!(a.slice(&s![NewAxis, ..., NewAxis, 0, 0, 0]).unwrap().shape(), &[1, 1]);
}

#[test]
fn masked_select_matches_numpy() {
    for d in common::devices() {
        common::on(d, || {
            let x = arange(12, &[3, 4])?.sub(5.0)?;
            check(&x.masked_select(&x.gt(0.0)?)?, &[6], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "x[x > 0]");
            let m: Vec<bool> = [0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1].iter().map(|&v| v == 1).collect();
            let mask = Array::from_slice(&m, &[3, 4])?;
            check(&x.masked_select(&mask)?, &[4], &[-3.0, 0.0, 3.0, 6.0], "x[x % 3 == 0]");
            check(&x.masked_select(&x.gt(100.0)?)?, &[0], &[], "x[x > 100]");
            // Errors: shape mismatch, a non-bool mask.
            assert!(matches!(x.masked_select(&mask.reshape(&[4, 3])?), Err(Error::Shape { .. })));
            assert!(matches!(x.masked_select(&x), Err(Error::DType { .. })));
            Ok(())
        })
        .unwrap();
    }
}

#[test]
fn at_updates_match_numpy() {
    for d in common::devices() {
        common::on(d, || {
            let b = arange(12, &[3, 4])?;
            let f = |v: &[f32], shape: &[usize]| Array::from_slice(v, shape);
            let i = |v: &[i32], shape: &[usize]| Array::from_slice(v, shape);
            let before = b.to_vec::<f32>()?;
            check(
                &b.at(s![1.., ..;2]).set(-1.0)?,
                &[3, 4],
                &[0.0, 1.0, 2.0, 3.0, -1.0, 5.0, -1.0, 7.0, -1.0, 9.0, -1.0, 11.0],
                "c[1:, ::2] = -1",
            );
            check(
                &b.at(s![1.., ..;2]).add(&f(&[10.0, 20.0], &[2])?)?,
                &[3, 4],
                &[0.0, 1.0, 2.0, 3.0, 14.0, 5.0, 26.0, 7.0, 18.0, 9.0, 30.0, 11.0],
                "c[1:, ::2] += [10, 20]",
            );
            check(
                &b.at(s![.., -1]).mul(3.0)?,
                &[3, 4],
                &[0.0, 1.0, 2.0, 9.0, 4.0, 5.0, 6.0, 21.0, 8.0, 9.0, 10.0, 33.0],
                "c[:, -1] *= 3",
            );
            let rows = f(&[100.0, 101.0, 102.0, 103.0], &[4])?;
            check(
                &b.at(&i(&[2, 0], &[2])?).set(&rows)?,
                &[3, 4],
                &[100.0, 101.0, 102.0, 103.0, 4.0, 5.0, 6.0, 7.0, 100.0, 101.0, 102.0, 103.0],
                "c[[2, 0]] = [100..103]",
            );
            check(
                &b.at(&i(&[0, 0, 2], &[3])?).add(1.0)?,
                &[3, 4],
                &[2.0, 3.0, 4.0, 5.0, 4.0, 5.0, 6.0, 7.0, 9.0, 10.0, 11.0, 12.0],
                "np.add.at(c, [0, 0, 2], 1)",
            );
            check(
                &b.at(&i(&[-1], &[1])?).set(7.0)?,
                &[3, 4],
                &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 7.0, 7.0, 7.0, 7.0],
                "c[[-1]] = 7",
            );
            check(
                &b.at(&i(&[1], &[1])?).mul(2.0)?,
                &[3, 4],
                &[0.0, 1.0, 2.0, 3.0, 8.0, 10.0, 12.0, 14.0, 8.0, 9.0, 10.0, 11.0],
                "c[[1]] *= 2",
            );
            let per_row = f(&[1.0, 2.0], &[2, 1, 1])?;
            check(
                &b.at(&i(&[0, 2], &[2, 1])?).set(&per_row)?,
                &[3, 4],
                &[1.0, 1.0, 1.0, 1.0, 4.0, 5.0, 6.0, 7.0, 2.0, 2.0, 2.0, 2.0],
                "c[[[0], [2]]] = [[[1]], [[2]]]",
            );
            // Out-of-range positions are dropped (JAX's default), the source is unchanged.
            check(&b.at(&i(&[5], &[1])?).set(9.0)?, &[3, 4], &before, "c[[5]] = 9 (dropped)");
            check(&b, &[3, 4], &before, "the source after the updates");
            check(&b.at(s![1, 1..3]).get()?, &[2], &[5.0, 6.0], "c[1, 1:3]");
            // Errors: values that do not broadcast, bad slices, positions into a 0-d array.
            assert!(matches!(b.at(s![.., 0]).set(&f(&[1.0, 2.0], &[2])?), Err(Error::Shape { .. })));
            assert!(matches!(b.at(s![3]).set(1.0), Err(Error::Invalid { .. })));
            assert!(matches!(b.at(&i(&[0], &[1])?).set(&f(&[1.0, 2.0], &[2])?), Err(Error::Shape { .. })));
            assert!(matches!(Array::scalar(1.0f32)?.at(&i(&[0], &[1])?).set(2.0), Err(Error::Shape { .. })));
            assert!(matches!(b.at(&f(&[0.0], &[1])?).set(2.0), Err(Error::DType { .. })));
            Ok(())
        })
        .unwrap();
    }
}

#[test]
fn take_with_mode_clips_or_raises() {
    for d in common::devices() {
        common::on(d, || {
            let t = Array::from_slice(&[10i32, 20, 30, 40], &[4])?;
            let idx = Array::from_slice(&[-1i32, 7, 2], &[3])?;
            assert_eq!(t.take_with_mode(&idx, None, IndexMode::Clip)?.to_vec::<i32>()?, vec![40, 40, 30]);
            let err = t.take_with_mode(&idx, None, IndexMode::Raise).unwrap_err();
            assert!(matches!(err, Error::Invalid { .. }) && err.to_string().contains("index 7"), "{err}");
            let ok = Array::from_slice(&[-4i32, 3], &[2])?;
            assert_eq!(t.take_with_mode(&ok, None, IndexMode::Raise)?.to_vec::<i32>()?, vec![10, 40]);
            let m = Array::from_slice(&(0..8).collect::<Vec<i32>>(), &[2, 4])?;
            let cols = Array::from_slice(&[3u32, 4], &[2])?;
            assert!(matches!(m.take_with_mode(&cols, Some(1), IndexMode::Raise), Err(Error::Invalid { .. })));
            let cols = Array::from_slice(&[3i32, -1], &[2])?;
            assert_eq!(m.take_with_mode(&cols, Some(1), IndexMode::Raise)?.to_vec::<i32>()?, vec![3, 3, 7, 7]);
            let floats = Array::from_slice(&[0.0f32], &[1])?;
            assert!(matches!(t.take_with_mode(&floats, None, IndexMode::Raise), Err(Error::DType { .. })));
            Ok(())
        })
        .unwrap();
    }
}
