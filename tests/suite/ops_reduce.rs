//! Reductions, arg-reductions, scans and their composites on the CPU, against NumPy.
// Expected values are NumPy's output pasted as literals, whatever constants they resemble.
#![allow(clippy::approx_constant, clippy::excessive_precision)]

use approx::assert_relative_eq;

use crate::common;
use lazuli::{Array, DType, Error};

type R = lazuli::Result<()>;

/// [[1, 5, 2], [4, -3, 6]]
fn x() -> Array {
    Array::from_slice(&[1.0f32, 5.0, 2.0, 4.0, -3.0, 6.0], &[2, 3]).unwrap()
}

/// arange(24).reshape(2, 3, 4) as I32.
fn cube() -> Array {
    let v: Vec<i32> = (0..24).collect();
    Array::from_slice(&v, &[2, 3, 4]).unwrap()
}

/// Element-wise closeness (rel 1e-5, abs 1e-6); NaN matches NaN, infinities exactly.
fn assert_close(actual: &[f32], expected: &[f32]) {
    common::assert_close("", actual, expected, 1e-5, 1e-6);
}

fn f32s(a: &Array) -> Vec<f32> {
    assert_eq!(a.dtype(), DType::F32);
    a.to_vec::<f32>().unwrap()
}

#[test]
fn sum_prod_shapes_and_values() -> R {
    let x = x();
    let s0 = x.sum(&[0], false)?;
    assert_eq!(s0.shape(), &[3]);
    assert_eq!(f32s(&s0), vec![5.0, 2.0, 8.0]);
    let s1 = x.sum(&[-1], true)?;
    assert_eq!(s1.shape(), &[2, 1]);
    assert_eq!(f32s(&s1), vec![8.0, 7.0]);
    let all = x.sum(&[], false)?;
    assert_eq!(all.shape(), &[] as &[usize]);
    assert_eq!(all.item::<f32>()?, 15.0);
    assert_eq!(x.sum(&[], true)?.shape(), &[1, 1]);
    assert_eq!(x.sum(&[1, 0], false)?.item::<f32>()?, 15.0);
    assert_eq!(f32s(&x.prod(&[1], false)?), vec![10.0, -72.0]);
    let c = cube();
    let s = c.sum(&[0, 2], false)?;
    assert_eq!(s.dtype(), DType::I32);
    assert_eq!(s.to_vec::<i32>()?, vec![60, 92, 124]);
    assert_eq!(c.sum(&[-1, 0], false)?.to_vec::<i32>()?, vec![60, 92, 124]);
    assert_eq!(c.prod(&[2], false)?.to_vec::<i32>()?, vec![0, 840, 7920, 32760, 93024, 212520]);
    let u = Array::from_slice(&[1u32, 2, 3], &[3])?;
    assert_eq!(u.sum(&[], false)?.item::<u32>()?, 6);
    Ok(())
}

#[test]
fn bool_reductions() -> R {
    let b = Array::from_slice(&[true, false, true, true, true, true], &[2, 3])?;
    let s = b.sum(&[1], false)?;
    assert_eq!(s.dtype(), DType::I32);
    assert_eq!(s.to_vec::<i32>()?, vec![2, 3]);
    assert_eq!(b.prod(&[0], false)?.to_vec::<i32>()?, vec![1, 0, 1]);
    assert_eq!(b.all(&[1], false)?.to_vec::<bool>()?, vec![false, true]);
    assert_eq!(b.any(&[0], false)?.to_vec::<bool>()?, vec![true, true, true]);
    assert!(!b.all(&[], false)?.item::<bool>()?);
    let i = Array::from_slice(&[0i32, 3, 0, 0], &[2, 2])?;
    let a = i.any(&[1], true)?;
    assert_eq!((a.shape(), a.dtype()), (&[2usize, 1][..], DType::Bool));
    assert_eq!(a.to_vec::<bool>()?, vec![true, false]);
    assert!(x().all(&[], false)?.item::<bool>()?);
    assert_eq!(b.max(&[1], false)?.to_vec::<bool>()?, vec![true, true]);
    assert_eq!(b.min(&[1], false)?.to_vec::<bool>()?, vec![false, true]);
    Ok(())
}

#[test]
fn max_min() -> R {
    let x = x();
    assert_eq!(f32s(&x.max(&[0], false)?), vec![4.0, 5.0, 6.0]);
    assert_eq!(f32s(&x.min(&[1], false)?), vec![1.0, -3.0]);
    assert_eq!(x.max(&[], false)?.item::<f32>()?, 6.0);
    assert_eq!(x.min(&[0, 1], true)?.shape(), &[1, 1]);
    let c = cube();
    assert_eq!(c.max(&[1], false)?.to_vec::<i32>()?, vec![8, 9, 10, 11, 20, 21, 22, 23]);
    assert_eq!(c.min(&[0, 1], false)?.to_vec::<i32>()?, vec![0, 1, 2, 3]);
    Ok(())
}

#[test]
fn mean_var_std() -> R {
    let x = x();
    assert_eq!(f32s(&x.mean(&[0], false)?), vec![2.5, 1.0, 4.0]);
    assert_eq!(x.mean(&[], false)?.item::<f32>()?, 2.5);
    assert_close(&f32s(&x.var(&[1], false, 0)?), &[2.888889, 14.888888]);
    assert_close(&f32s(&x.var(&[1], false, 1)?), &[4.3333335, 22.333332]);
    assert_close(&[x.var(&[], false, 0)?.item::<f32>()?], &[8.916667]);
    assert_close(&[x.std(&[], false, 0)?.item::<f32>()?], &[2.986079]);
    let v = x.var(&[0], true, 0)?;
    assert_eq!(v.shape(), &[1, 3]);
    assert_eq!(f32s(&v), vec![2.25, 16.0, 4.0]);
    // Integers give F32.
    let c = cube();
    let m = c.mean(&[1], false)?;
    assert_eq!(m.dtype(), DType::F32);
    assert_eq!(f32s(&m), vec![4.0, 5.0, 6.0, 7.0, 16.0, 17.0, 18.0, 19.0]);
    assert_close(&f32s(&c.var(&[0, 2], false, 0)?), &[37.25, 37.25, 37.25]);
    // n <= ddof: inf (NumPy warns and gives the same).
    assert_close(&f32s(&x.var(&[0], false, 2)?), &[f32::INFINITY; 3]);
    let f64s = Array::from_slice(&[1.0f64, 2.0, 4.0], &[3])?;
    assert_eq!(f64s.mean(&[], false)?.dtype(), DType::F64);
    assert_relative_eq!(f64s.std(&[], false, 1)?.item::<f64>()?, 1.5275252316519468, epsilon = 1e-12);
    Ok(())
}

#[test]
fn logsumexp_softmax() -> R {
    let x = x();
    assert_close(&f32s(&x.logsumexp(&[1], false)?), &[5.065884, 6.1270366]);
    assert_close(&[x.logsumexp(&[], false)?.item::<f32>()?], &[6.424216]);
    let s = x.softmax(&[1])?;
    assert_eq!(s.shape(), &[2, 3]);
    assert_close(
        &f32s(&s),
        &[1.7147826e-02, 9.3623954e-01, 4.6612624e-02, 1.1918996e-01, 1.0868718e-04, 8.8070136e-01],
    );
    assert_close(
        &f32s(&x.softmax(&[0])?),
        &[4.7425874e-02, 9.9966466e-01, 1.7986210e-02, 9.5257413e-01, 3.3535014e-04, 9.8201376e-01],
    );
    let sm = x.softmax(&[])?.sum(&[], false)?.item::<f32>()?;
    assert_relative_eq!(sm, 1.0, epsilon = 1e-6);
    // Large values stay finite; infinite rows follow SciPy.
    let big = Array::from_slice(&[1000.0f32, 1000.0, f32::NEG_INFINITY, f32::NEG_INFINITY], &[2, 2])?;
    assert_close(&f32s(&big.logsumexp(&[1], false)?), &[1000.6931472, f32::NEG_INFINITY]);
    assert_close(&f32s(&big.softmax(&[1])?)[..2], &[0.5, 0.5]);
    let inf = Array::from_slice(&[f32::INFINITY, 1.0], &[2])?;
    assert_close(&[inf.logsumexp(&[], false)?.item::<f32>()?], &[f32::INFINITY]);
    assert_eq!(Array::from_slice(&[1i32, 2], &[2])?.logsumexp(&[], false)?.dtype(), DType::F32);
    Ok(())
}

#[test]
fn arg_reductions() -> R {
    let x = x();
    let a = x.argmax(1, false)?;
    assert_eq!((a.shape(), a.dtype()), (&[2usize][..], DType::U32));
    assert_eq!(a.to_vec::<u32>()?, vec![1, 2]);
    let b = x.argmin(0, true)?;
    assert_eq!(b.shape(), &[1, 3]);
    assert_eq!(b.to_vec::<u32>()?, vec![0, 1, 0]);
    assert_eq!(x.argmax(-2, false)?.to_vec::<u32>()?, vec![1, 0, 1]);
    // Ties give the first index.
    let t = Array::from_slice(&[3i32, 7, 7, 1, 1], &[5])?;
    assert_eq!(t.argmax(0, false)?.item::<u32>()?, 1);
    assert_eq!(t.argmin(0, false)?.item::<u32>()?, 3);
    // Empty non-reduced axis is fine, as NumPy.
    assert_eq!(Array::from_slice::<f32>(&[], &[2, 0])?.argmax(0, false)?.shape(), &[0]);
    Ok(())
}

#[test]
fn scans() -> R {
    let x = x();
    assert_eq!(f32s(&x.cumsum(1, false)?), vec![1.0, 6.0, 8.0, 4.0, 1.0, 7.0]);
    assert_eq!(f32s(&x.cumsum(-1, true)?), vec![8.0, 7.0, 2.0, 7.0, 3.0, 6.0]);
    assert_eq!(f32s(&x.cumprod(0, false)?), vec![1.0, 5.0, 2.0, 4.0, -15.0, 12.0]);
    assert_eq!(f32s(&x.cummax(1, false)?), vec![1.0, 5.0, 5.0, 4.0, 4.0, 6.0]);
    assert_eq!(f32s(&x.cummin(1, false)?), vec![1.0, 1.0, 1.0, 4.0, -3.0, -3.0]);
    let b = Array::from_slice(&[true, false, true], &[3])?;
    let cb = b.cumsum(0, false)?;
    assert_eq!(cb.dtype(), DType::I32);
    assert_eq!(cb.to_vec::<i32>()?, vec![1, 1, 2]);
    let i = Array::from_slice(&[1i64, 2, 3], &[3])?;
    assert_eq!(i.cumsum(0, false)?.to_vec::<i64>()?, vec![1, 3, 6]);
    Ok(())
}

#[test]
fn empty_reductions() -> R {
    let e = Array::from_slice::<f32>(&[], &[0, 3])?;
    let s = e.sum(&[0], false)?;
    assert_eq!(s.shape(), &[3]);
    assert_eq!(f32s(&s), vec![0.0; 3]);
    assert_eq!(e.sum(&[], false)?.item::<f32>()?, 0.0);
    assert_eq!(f32s(&e.prod(&[0], false)?), vec![1.0; 3]);
    assert_eq!(e.all(&[0], false)?.to_vec::<bool>()?, vec![true; 3]);
    assert_eq!(e.any(&[0], false)?.to_vec::<bool>()?, vec![false; 3]);
    assert!(f32s(&e.mean(&[0], false)?).iter().all(|v| v.is_nan()));
    assert_eq!(f32s(&e.logsumexp(&[0], false)?), vec![f32::NEG_INFINITY; 3]);
    // Reducing the non-empty axis of an empty array: empty result, no error.
    assert_eq!(e.max(&[1], false)?.shape(), &[0]);
    assert_eq!(e.softmax(&[0])?.shape(), &[0, 3]);
    assert_eq!(e.cumsum(0, false)?.shape(), &[0, 3]);
    // No identity: errors, as NumPy.
    assert!(matches!(e.max(&[0], false), Err(Error::Shape { .. })));
    assert!(matches!(e.min(&[], false), Err(Error::Shape { .. })));
    assert!(matches!(e.argmax(0, false), Err(Error::Shape { .. })));
    assert!(matches!(e.argmin(-2, true), Err(Error::Shape { .. })));
    let i = Array::from_slice::<i32>(&[], &[0])?;
    assert_eq!(i.sum(&[], false)?.item::<i32>()?, 0);
    Ok(())
}

#[test]
fn scalar_reductions() -> R {
    let s = Array::scalar(3.0f32)?;
    assert_eq!(s.sum(&[], false)?.item::<f32>()?, 3.0);
    assert_eq!(s.max(&[], true)?.item::<f32>()?, 3.0);
    assert_eq!(s.mean(&[], false)?.item::<f32>()?, 3.0);
    assert_eq!(s.var(&[], false, 0)?.item::<f32>()?, 0.0);
    assert_eq!(s.softmax(&[])?.item::<f32>()?, 1.0);
    assert!(matches!(s.sum(&[0], false), Err(Error::Axis { .. })));
    assert!(matches!(s.argmax(0, false), Err(Error::Axis { .. })));
    // NumPy scans a 0-d array as one element.
    assert_eq!(s.cumsum(0, false)?.to_vec::<f32>()?, vec![3.0]);
    assert!(matches!(s.cumsum(1, false), Err(Error::Axis { .. })));
    Ok(())
}

#[test]
fn axis_errors() {
    let x = x();
    let bad: [&[isize]; 3] = [&[2], &[-3], &[0, 5]];
    for axes in bad {
        assert!(matches!(x.sum(axes, false), Err(Error::Axis { .. })), "{axes:?}");
        assert!(matches!(x.max(axes, true), Err(Error::Axis { .. })), "{axes:?}");
        assert!(matches!(x.mean(axes, false), Err(Error::Axis { .. })), "{axes:?}");
        assert!(matches!(x.var(axes, false, 0), Err(Error::Axis { .. })), "{axes:?}");
        assert!(matches!(x.all(axes, false), Err(Error::Axis { .. })), "{axes:?}");
        assert!(matches!(x.logsumexp(axes, false), Err(Error::Axis { .. })), "{axes:?}");
        assert!(matches!(x.softmax(axes), Err(Error::Axis { .. })), "{axes:?}");
    }
    // Repeated axes, also when spelled differently.
    for axes in [&[0, 0][..], &[1, -1]] {
        assert!(matches!(x.sum(axes, false), Err(Error::Invalid { .. })), "{axes:?}");
        assert!(matches!(x.prod(axes, false), Err(Error::Invalid { .. })), "{axes:?}");
        assert!(matches!(x.std(axes, false, 0), Err(Error::Invalid { .. })), "{axes:?}");
        assert!(matches!(x.any(axes, false), Err(Error::Invalid { .. })), "{axes:?}");
    }
    assert!(matches!(x.argmax(2, false), Err(Error::Axis { .. })));
    assert!(matches!(x.argmin(-3, false), Err(Error::Axis { .. })));
    assert!(matches!(x.cumsum(2, false), Err(Error::Axis { .. })));
    assert!(matches!(x.cummax(-3, true), Err(Error::Axis { .. })));
}
