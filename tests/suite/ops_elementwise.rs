//! Creation, unary, binary and operator ops on the CPU, against values from NumPy.
// Expected values are NumPy's output pasted as literals, whatever constants they resemble.
#![allow(clippy::approx_constant, clippy::excessive_precision)]

use approx::assert_relative_eq;

use crate::common;
use lazuli::{Array, DType, Error, arange, eye, full, linspace, ones, where_, zeros};

type R = lazuli::Result<()>;

fn farr(v: &[f32], shape: &[usize]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

fn iarr(v: &[i32], shape: &[usize]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

fn barr(v: &[bool], shape: &[usize]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

/// Element-wise closeness (rel 1e-5, abs 1e-6); NaN matches NaN, infinities exactly.
fn assert_close(actual: &[f32], expected: &[f32]) {
    common::assert_close("", actual, expected, 1e-5, 1e-6);
}

fn f32s(a: &Array) -> Vec<f32> {
    assert_eq!(a.dtype(), DType::F32);
    a.to_vec::<f32>().unwrap()
}

// ---------------------------------------------------------------- creation

#[test]
fn full_zeros_ones() -> R {
    let z = zeros(&[2, 3], DType::F32)?;
    assert_eq!(z.shape(), &[2, 3]);
    assert_eq!(z.to_vec::<f32>()?, vec![0.0; 6]);
    assert_eq!(ones(&[4], DType::I32)?.to_vec::<i32>()?, vec![1; 4]);
    assert_eq!(ones(&[2], DType::Bool)?.to_vec::<bool>()?, vec![true, true]);
    assert_eq!(full(&[3], -2.5, DType::F64)?.to_vec::<f64>()?, vec![-2.5; 3]);
    // Truncated into integers, as NumPy's full.
    assert_eq!(full(&[2], 2.9, DType::I32)?.to_vec::<i32>()?, vec![2, 2]);
    assert_eq!(full(&[], 7.0, DType::U32)?.item::<u32>()?, 7);
    assert_eq!(full(&[0, 3], 1.0, DType::F32)?.to_vec::<f32>()?, Vec::<f32>::new());
    let a = farr(&[1.0, 2.0], &[2, 1]);
    assert_eq!(a.zeros_like()?.shape(), &[2, 1]);
    assert_eq!(a.ones_like()?.to_vec::<f32>()?, vec![1.0, 1.0]);
    assert_eq!(iarr(&[1, 2, 3], &[3]).full_like(9.0)?.to_vec::<i32>()?, vec![9, 9, 9]);
    Ok(())
}

#[test]
fn full_errors() {
    assert!(matches!(full(&[2], f64::NAN, DType::I32), Err(Error::DType { .. })));
    assert!(matches!(full(&[2], -1.0, DType::U32), Err(Error::DType { .. })));
    assert!(matches!(full(&[2], 3e9, DType::I32), Err(Error::DType { .. })));
    assert!(matches!(zeros(&[usize::MAX, 2], DType::F32), Err(Error::Shape { .. })));
    assert!(iarr(&[1], &[1]).full_like(f64::INFINITY).is_err());
}

#[test]
fn arange_values() -> R {
    assert_eq!(arange(0.0, 5.0, 1.0, DType::I32)?.to_vec::<i32>()?, vec![0, 1, 2, 3, 4]);
    assert_eq!(arange(1.5, -2.0, -0.75, DType::F64)?.to_vec::<f64>()?, vec![1.5, 0.75, 0.0, -0.75, -1.5]);
    let a = arange(0.0, 1.0, 0.1, DType::F32)?;
    assert_eq!(a.shape(), &[10]);
    assert_close(&f32s(&a), &[0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]);
    // ceil((stop - start) / step), clamped at 0.
    assert_eq!(arange(0.0, 10.0, 3.0, DType::I64)?.to_vec::<i64>()?, vec![0, 3, 6, 9]);
    assert_eq!(arange(5.0, 0.0, 1.0, DType::F32)?.shape(), &[0]);
    assert_eq!(arange(2.0, 2.0, 1.0, DType::U32)?.shape(), &[0]);
    Ok(())
}

#[test]
fn arange_errors() {
    assert!(matches!(arange(0.0, 5.0, 0.0, DType::F32), Err(Error::Invalid { .. })));
    assert!(matches!(arange(0.0, f64::INFINITY, 1.0, DType::F32), Err(Error::Invalid { .. })));
    assert!(matches!(arange(f64::NAN, 1.0, 1.0, DType::F32), Err(Error::Invalid { .. })));
    assert!(matches!(arange(0.0, 1.0, f64::NAN, DType::F32), Err(Error::Invalid { .. })));
    assert!(matches!(arange(0.0, 2.0, 1.0, DType::Bool), Err(Error::DType { .. })));
    assert!(matches!(arange(-3.0, 2.0, 1.0, DType::U32), Err(Error::DType { .. })));
    assert!(arange(0.0, 1e300, 1e-300, DType::F32).is_err());
}

#[test]
fn linspace_values() -> R {
    let a = linspace(0.0, 1.0, 7, DType::F32)?;
    assert_close(&f32s(&a), &[0.0, 0.16666667, 0.33333334, 0.5, 0.6666667, 0.8333333, 1.0]);
    let b = linspace(-3.0, 5.0, 4, DType::F64)?.to_vec::<f64>()?;
    assert_relative_eq!(b[1], -0.3333333333333335, epsilon = 1e-12);
    assert_relative_eq!(b[2], 2.333333333333333, epsilon = 1e-12);
    assert_eq!((b[0], b[3]), (-3.0, 5.0));
    // The last value is exactly stop even where start + 2 * step rounds away from it.
    let c = linspace(0.1, 0.7, 3, DType::F64)?.to_vec::<f64>()?;
    assert_eq!(c[2], 0.7);
    assert_eq!(linspace(0.0, 10.0, 4, DType::I32)?.to_vec::<i32>()?, vec![0, 3, 6, 10]);
    assert_eq!(linspace(2.0, 9.0, 1, DType::F32)?.to_vec::<f32>()?, vec![2.0]);
    assert_eq!(linspace(2.0, 9.0, 0, DType::F32)?.shape(), &[0]);
    assert!(linspace(0.0, f64::NAN, 3, DType::F32).is_err());
    assert!(linspace(-1.0, 1.0, 3, DType::U32).is_err());
    Ok(())
}

#[test]
fn eye_values() -> R {
    assert_eq!(eye(3, None, 0, DType::F32)?.to_vec::<f32>()?, vec![1., 0., 0., 0., 1., 0., 0., 0., 1.]);
    let a = eye(3, Some(4), -1, DType::I32)?;
    assert_eq!(a.shape(), &[3, 4]);
    assert_eq!(a.to_vec::<i32>()?, vec![0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0]);
    assert_eq!(eye(2, Some(3), 2, DType::Bool)?.to_vec::<bool>()?, vec![false, false, true, false, false, false]);
    assert_eq!(eye(2, Some(2), 5, DType::F32)?.to_vec::<f32>()?, vec![0.0; 4]);
    assert_eq!(eye(2, Some(2), -2, DType::F32)?.to_vec::<f32>()?, vec![0.0; 4]);
    assert_eq!(eye(0, Some(3), 0, DType::F32)?.shape(), &[0, 3]);
    assert!(eye(usize::MAX, None, 0, DType::F32).is_err());
    Ok(())
}

// ---------------------------------------------------------------- unary

const X: [f32; 6] = [-2.0, -0.5, 0.0, 0.5, 1.0, 2.5];

#[test]
fn unary_float_values() -> R {
    let x = farr(&X, &[2, 3]);
    let cases: [(&str, Array, [f32; 6]); 11] = [
        ("exp", x.exp()?, [0.13533528, 0.60653067, 1.0, 1.6487212, 2.718282, 12.182493]),
        ("expm1", x.expm1()?, [-0.86466473, -0.39346933, 0.0, 0.6487213, 1.7182819, 11.182494]),
        ("log1p", x.log1p()?, [f32::NAN, -0.6931472, 0.0, 0.40546513, 0.6931472, 1.252763]),
        ("sqrt", x.sqrt()?, [f32::NAN, f32::NAN, 0.0, 0.70710677, 1.0, 1.5811388]),
        ("sin", x.sin()?, [-0.9092974, -0.47942555, 0.0, 0.47942555, 0.841471, 0.5984722]),
        ("cos", x.cos()?, [-0.4161468, 0.87758255, 1.0, 0.87758255, 0.5403023, -0.8011436]),
        ("tan", x.tan()?, [2.18504, -0.5463025, 0.0, 0.5463025, 1.5574077, -0.7470223]),
        ("tanh", x.tanh()?, [-0.9640276, -0.4621172, 0.0, 0.4621172, 0.7615942, 0.9866143]),
        ("sigmoid", x.sigmoid()?, [0.11920292, 0.37754068, 0.5, 0.62245935, 0.7310586, 0.9241418]),
        ("erf", x.erf()?, [-0.9953223, -0.5204999, 0.0, 0.5204999, 0.8427008, 0.999593]),
        ("gelu", x.gelu()?, [-0.045500264, -0.15426877, 0.0, 0.34573123, 0.8413448, 2.4844759]),
    ];
    for (name, a, want) in cases {
        assert_eq!(a.shape(), &[2, 3], "{name}");
        assert_eq!(a.dtype(), DType::F32, "{name}");
        assert_close(&f32s(&a), &want);
    }
    let y = farr(&[0.25, 1.0, 4.0, 10.0], &[4]);
    assert_close(&f32s(&y.log()?), &[-1.3862944, 0.0, 1.3862944, 2.3025851]);
    assert_close(&f32s(&y.log2()?), &[-2.0, 0.0, 2.0, 3.321928]);
    assert_close(&f32s(&y.rsqrt()?), &[2.0, 1.0, 0.5, 0.31622776]);
    assert_close(&f32s(&y.reciprocal()?), &[4.0, 1.0, 0.25, 0.1]);
    assert_close(&f32s(&farr(&[0.0, -1.0], &[2]).log()?), &[f32::NEG_INFINITY, f32::NAN]);
    Ok(())
}

#[test]
fn unary_sign_family() -> R {
    let x = farr(&X, &[6]);
    assert_eq!(f32s(&x.neg()?), vec![2.0, 0.5, -0.0, -0.5, -1.0, -2.5]);
    assert_eq!(f32s(&x.abs()?), vec![2.0, 0.5, 0.0, 0.5, 1.0, 2.5]);
    assert_eq!(f32s(&x.sign()?), vec![-1.0, -1.0, 0.0, 1.0, 1.0, 1.0]);
    assert_eq!(f32s(&x.square()?), vec![4.0, 0.25, 0.0, 0.25, 1.0, 6.25]);
    assert_eq!(f32s(&x.relu()?), vec![0.0, 0.0, 0.0, 0.5, 1.0, 2.5]);
    let i = iarr(&[-3, 0, 4], &[3]);
    assert_eq!(i.neg()?.to_vec::<i32>()?, vec![3, 0, -4]);
    assert_eq!(i.abs()?.to_vec::<i32>()?, vec![3, 0, 4]);
    assert_eq!(i.sign()?.to_vec::<i32>()?, vec![-1, 0, 1]);
    assert_eq!(i.square()?.to_vec::<i32>()?, vec![9, 0, 16]);
    assert_eq!(i.relu()?.to_vec::<i32>()?, vec![0, 0, 4]);
    let b = barr(&[true, false], &[2]);
    assert!(matches!(b.neg(), Err(Error::DType { .. })));
    assert!(matches!(b.sign(), Err(Error::DType { .. })));
    assert!(matches!(-&b, Err(Error::DType { .. })));
    assert_eq!(b.abs()?.to_vec::<bool>()?, vec![true, false]);
    let sq = b.square()?;
    assert_eq!(sq.dtype(), DType::I32);
    assert_eq!(sq.to_vec::<i32>()?, vec![1, 0]);
    let u = Array::from_slice(&[3u32, 0], &[2])?;
    assert_eq!(u.abs()?.to_vec::<u32>()?, vec![3, 0]);
    assert_eq!(u.relu()?.to_vec::<u32>()?, vec![3, 0]);
    Ok(())
}

#[test]
fn unary_rounding() -> R {
    let r = farr(&[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.7, 0.7], &[8]);
    assert_eq!(f32s(&r.floor()?), vec![-3., -2., -1., 0., 1., 2., -1., 0.]);
    assert_eq!(f32s(&r.ceil()?), vec![-2., -1., -0., 1., 2., 3., -0., 1.]);
    // Halves to even.
    assert_eq!(f32s(&r.round()?), vec![-2., -2., -0., 0., 2., 2., -1., 1.]);
    let i = iarr(&[-2, 5], &[2]);
    // Identity on integers: the same node comes back.
    let fl = i.floor()?;
    assert_eq!(fl.dtype(), DType::I32);
    assert!(fl.is_evaluated());
    assert_eq!(i.ceil()?.to_vec::<i32>()?, vec![-2, 5]);
    assert_eq!(i.round()?.to_vec::<i32>()?, vec![-2, 5]);
    Ok(())
}

#[test]
fn unary_predicates() -> R {
    let x = farr(&[1.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0], &[5]);
    let n = x.isnan()?;
    assert_eq!(n.dtype(), DType::Bool);
    assert_eq!(n.to_vec::<bool>()?, vec![false, true, false, false, false]);
    assert_eq!(x.isinf()?.to_vec::<bool>()?, vec![false, false, true, true, false]);
    let i = iarr(&[1, 2, 3, 4], &[2, 2]);
    let ni = i.isnan()?;
    assert_eq!((ni.shape(), ni.dtype()), (&[2usize, 2][..], DType::Bool));
    assert_eq!(ni.to_vec::<bool>()?, vec![false; 4]);
    assert_eq!(i.isinf()?.to_vec::<bool>()?, vec![false; 4]);
    assert_eq!(x.logical_not()?.to_vec::<bool>()?, vec![false, false, false, false, true]);
    assert_eq!(iarr(&[0, 3], &[2]).logical_not()?.to_vec::<bool>()?, vec![true, false]);
    assert_eq!(barr(&[true, false], &[2]).logical_not()?.to_vec::<bool>()?, vec![false, true]);
    Ok(())
}

#[test]
fn unary_casts_ints_to_f32() -> R {
    let i = iarr(&[1, 2, 3], &[3]);
    let e = i.exp()?;
    assert_eq!(e.dtype(), DType::F32);
    assert_close(&f32s(&e), &[2.718282, 7.3890557, 20.085537]);
    assert_eq!(i.sqrt()?.dtype(), DType::F32);
    assert_eq!(i.gelu()?.dtype(), DType::F32);
    assert_eq!(barr(&[true], &[1]).sin()?.dtype(), DType::F32);
    let h = Array::from_slice(&[half::f16::from_f32(1.0)], &[1])?;
    assert_eq!(h.exp()?.dtype(), DType::F16);
    let d = Array::from_slice(&[1.0f64], &[1])?;
    assert_eq!(d.exp()?.to_vec::<f64>()?, vec![std::f64::consts::E]);
    Ok(())
}

#[test]
fn astype_values() -> R {
    let x = farr(&[-1.7, 0.0, 2.9], &[3]);
    assert_eq!(x.astype(DType::I32)?.to_vec::<i32>()?, vec![-1, 0, 2]);
    assert_eq!(x.astype(DType::Bool)?.to_vec::<bool>()?, vec![true, false, true]);
    Ok(())
}

// ---------------------------------------------------------------- binary

#[test]
fn arithmetic_same_shape() -> R {
    let a = farr(&[7.0, -7.0, 7.0, -7.0, 5.0, 0.0], &[6]);
    let b = farr(&[2.0, 2.0, -2.0, -2.0, 0.0, 3.0], &[6]);
    assert_eq!(f32s(&a.add(&b)?), vec![9.0, -5.0, 5.0, -9.0, 5.0, 3.0]);
    assert_eq!(f32s(&a.sub(&b)?), vec![5.0, -9.0, 9.0, -5.0, 5.0, -3.0]);
    assert_eq!(f32s(&a.mul(&b)?), vec![14.0, -14.0, -14.0, 14.0, 0.0, 0.0]);
    assert_close(&f32s(&a.div(&b)?), &[3.5, -3.5, -3.5, 3.5, f32::INFINITY, 0.0]);
    assert_close(&f32s(&a.remainder(&b)?), &[1.0, 1.0, -1.0, -1.0, f32::NAN, 0.0]);
    assert_close(&f32s(&a.floor_divide(&b)?), &[3.0, -4.0, -4.0, 3.0, f32::INFINITY, 0.0]);
    assert_eq!(f32s(&a.maximum(&b)?), vec![7.0, 2.0, 7.0, -2.0, 5.0, 3.0]);
    assert_eq!(f32s(&a.minimum(&b)?), vec![2.0, -7.0, -2.0, -7.0, 0.0, 0.0]);
    let p = farr(&[1.5, 2.0, -2.0], &[3]).pow(2.5f32)?;
    assert_close(&f32s(&p), &[2.755676, 5.656854, f32::NAN]);
    Ok(())
}

#[test]
fn integer_arithmetic() -> R {
    let a = iarr(&[7, -7, 7, -7, 5, 0], &[6]);
    let b = iarr(&[2, 2, -2, -2, 0, 3], &[6]);
    assert_eq!(a.add(&b)?.to_vec::<i32>()?, vec![9, -5, 5, -9, 5, 3]);
    // Sign of the divisor; by zero gives 0 (primitive convention).
    assert_eq!(a.remainder(&b)?.to_vec::<i32>()?, vec![1, 1, -1, -1, 0, 0]);
    assert_eq!(a.floor_divide(&b)?.to_vec::<i32>()?, vec![3, -4, -4, 3, 0, 0]);
    assert_eq!(a.maximum(&b)?.to_vec::<i32>()?, vec![7, 2, 7, -2, 5, 3]);
    assert_eq!(iarr(&[2, 3, -2], &[3]).pow(3)?.to_vec::<i32>()?, vec![8, 27, -8]);
    // True division gives F32.
    let d = iarr(&[1, 2, 3], &[3]).div(iarr(&[2, 4, 3], &[3]))?;
    assert_eq!(d.dtype(), DType::F32);
    assert_eq!(f32s(&d), vec![0.5, 0.5, 1.0]);
    Ok(())
}

#[test]
fn comparisons_and_logic() -> R {
    let a = farr(&[1.0, 2.0, 3.0, f32::NAN], &[4]);
    let b = farr(&[2.0, 2.0, 2.0, 2.0], &[4]);
    let t = |x: Array| x.to_vec::<bool>().unwrap();
    assert_eq!(a.eq(&b)?.dtype(), DType::Bool);
    assert_eq!(t(a.eq(&b)?), vec![false, true, false, false]);
    assert_eq!(t(a.ne(&b)?), vec![true, false, true, true]);
    assert_eq!(t(a.lt(&b)?), vec![true, false, false, false]);
    assert_eq!(t(a.le(&b)?), vec![true, true, false, false]);
    assert_eq!(t(a.gt(&b)?), vec![false, false, true, false]);
    assert_eq!(t(a.ge(&b)?), vec![false, true, true, false]);
    assert_eq!(t(iarr(&[1, 5], &[2]).lt(2.5)?), vec![true, false]);
    let p = barr(&[true, true, false, false], &[4]);
    let q = iarr(&[3, 0, -1, 0], &[4]);
    assert_eq!(t(p.logical_and(&q)?), vec![true, false, false, false]);
    assert_eq!(t(p.logical_or(&q)?), vec![true, true, true, false]);
    assert_eq!(t(p.logical_xor(&q)?), vec![false, true, true, false]);
    assert_eq!(t(p.logical_and(true)?), vec![true, true, false, false]);
    Ok(())
}

#[test]
fn broadcasting() -> R {
    let x = farr(&[0., 1., 2., 3., 4., 5.], &[2, 3]);
    let col = farr(&[10., 20.], &[2, 1]);
    let s = x.add(&col)?;
    assert_eq!(s.shape(), &[2, 3]);
    assert_eq!(f32s(&s), vec![10., 11., 12., 23., 24., 25.]);
    assert_eq!(f32s(&x.sub(&col)?), vec![-10., -9., -8., -17., -16., -15.]);
    let row = iarr(&[1, 2, 3], &[3]);
    let m = x.mul(&row)?;
    assert_eq!(m.dtype(), DType::F32);
    assert_eq!(f32s(&m), vec![0., 2., 6., 3., 8., 15.]);
    // [2, 1] with [1, 3] -> [2, 3]; [3, 1, 2] with [4, 1] -> [3, 4, 2].
    let o = col.mul(farr(&[1., 2., 3.], &[1, 3]))?;
    assert_eq!(f32s(&o), vec![10., 20., 30., 20., 40., 60.]);
    let big = farr(&[0.0; 6], &[3, 1, 2]).add(farr(&[1., 2., 3., 4.], &[4, 1]))?;
    assert_eq!(big.shape(), &[3, 4, 2]);
    assert_eq!(f32s(&big)[..8], [1., 1., 2., 2., 3., 3., 4., 4.]);
    // Empty broadcast dims.
    let e = farr(&[], &[0, 3]).add(farr(&[1., 2., 3.], &[3]))?;
    assert_eq!(e.shape(), &[0, 3]);
    assert_eq!(e.to_vec::<f32>()?, Vec::<f32>::new());
    // Bad shapes.
    assert!(matches!(x.add(farr(&[1., 2.], &[2])), Err(Error::Shape { .. })));
    assert!(matches!(x.eq(farr(&[0.0; 4], &[4, 1])), Err(Error::Shape { .. })));
    Ok(())
}

#[test]
fn promotion_rules() -> R {
    let f = farr(&[1.0], &[1]);
    let i = iarr(&[1], &[1]);
    let u = Array::from_slice(&[1u32], &[1])?;
    let b = barr(&[true], &[1]);
    let h = Array::from_slice(&[half::f16::from_f32(1.0)], &[1])?;
    let d = Array::from_slice(&[1.0f64], &[1])?;
    assert_eq!(i.add(&f)?.dtype(), DType::F32);
    // u32 with i32 stays 32-bit (every device runs it) and wraps like JAX's.
    assert_eq!(i.add(&u)?.dtype(), DType::I32);
    let big = Array::from_slice(&[3_000_000_000u32], &[1])?;
    assert_eq!(big.add(&i)?.to_vec::<i32>()?, vec![3_000_000_001u32 as i32]);
    assert_eq!(i.add(&h)?.dtype(), DType::F16);
    assert_eq!(f.add(&d)?.dtype(), DType::F64);
    assert_eq!(b.add(&i)?.dtype(), DType::I32);
    // Weak scalars take the array's dtype...
    assert_eq!(h.mul(2.0)?.dtype(), DType::F16);
    assert_eq!(u.add(1)?.dtype(), DType::U32);
    assert_eq!(i.add(1i64)?.dtype(), DType::I32);
    assert_eq!(d.add(1.5f32)?.dtype(), DType::F64);
    // ...except a float scalar with an integer or bool array, and int with bool.
    assert_eq!(f32s(&i.add(0.5)?), vec![1.5]);
    assert_eq!(b.mul(2.5)?.dtype(), DType::F32);
    assert_eq!(b.add(1)?.to_vec::<i32>()?, vec![2]);
    // Bool arithmetic works in I32; maximum / minimum stay bool.
    let bb = barr(&[true, true, false], &[3]);
    let cc = barr(&[true, false, false], &[3]);
    assert_eq!(bb.add(&cc)?.to_vec::<i32>()?, vec![2, 1, 0]);
    assert_eq!(bb.sub(&cc)?.to_vec::<i32>()?, vec![0, 1, 0]);
    assert_eq!(bb.maximum(&cc)?.to_vec::<bool>()?, vec![true, true, false]);
    assert_eq!(bb.minimum(&cc)?.to_vec::<bool>()?, vec![true, false, false]);
    assert_eq!(bb.div(&cc)?.dtype(), DType::F32);
    assert_eq!(bb.add(true)?.to_vec::<i32>()?, vec![2, 2, 1]);
    // Integer scalars must fit the array's integer dtype.
    assert!(matches!(u.add(-1), Err(Error::DType { .. })));
    assert!(matches!(i.add(1i64 << 40), Err(Error::DType { .. })));
    Ok(())
}

#[test]
fn scalars_are_lazy_constants() -> R {
    let x = farr(&[1.0, 2.0], &[2]);
    let y = x.add(1.0)?;
    assert!(!y.is_evaluated());
    assert_eq!(f32s(&y), vec![2.0, 3.0]);
    assert_eq!(f32s(&x.sub(3i32)?), vec![-2.0, -1.0]);
    assert_eq!(f32s(&x.mul(2u32)?), vec![2.0, 4.0]);
    assert_eq!(f32s(&x.div(4.0f32)?), vec![0.25, 0.5]);
    Ok(())
}

#[test]
fn where_values() -> R {
    let c = barr(&[true, false, true], &[3]);
    let a = farr(&[1., 2., 3.], &[3]);
    let b = farr(&[10., 20.], &[2, 1]);
    let w = where_(&c, &a, &b)?;
    assert_eq!(w.shape(), &[2, 3]);
    assert_eq!(f32s(&w), vec![1., 10., 3., 1., 20., 3.]);
    // Non-bool condition is read as != 0; scalar branch.
    let w = where_(&iarr(&[0, 5], &[2]), 7, iarr(&[1, 2], &[2]))?;
    assert_eq!(w.dtype(), DType::I32);
    assert_eq!(w.to_vec::<i32>()?, vec![1, 7]);
    // Two scalars: int with float gives F32.
    let w = where_(&c, 1, 0.5)?;
    assert_eq!(f32s(&w), vec![1.0, 0.5, 1.0]);
    assert_eq!(where_(&c, true, false)?.to_vec::<bool>()?, vec![true, false, true]);
    assert!(matches!(where_(&c, farr(&[1., 2.], &[2]), 0.0), Err(Error::Shape { .. })));
    assert!(matches!(where_(&barr(&[true; 4], &[4]), &a, 0.0), Err(Error::Shape { .. })));
    Ok(())
}

#[test]
fn clip_values() -> R {
    let x = farr(&[-3.0, 0.5, 2.0, 9.0], &[4]);
    assert_eq!(f32s(&x.clip(Some(0.0), Some(2.0))?), vec![0.0, 0.5, 2.0, 2.0]);
    assert_eq!(f32s(&x.clip(None, Some(1.0))?), vec![-3.0, 0.5, 1.0, 1.0]);
    assert_eq!(f32s(&x.clip(Some(1.0), None)?), vec![1.0, 1.0, 2.0, 9.0]);
    assert_eq!(f32s(&x.clip(None, None)?), vec![-3.0, 0.5, 2.0, 9.0]);
    // min > max gives max, as NumPy.
    assert_eq!(f32s(&x.clip(Some(5.0), Some(1.0))?), vec![1.0; 4]);
    let i = iarr(&[-3, 1, 8], &[3]);
    let ci = i.clip(Some(0.0), Some(5.0))?;
    assert_eq!(ci.dtype(), DType::I32);
    assert_eq!(ci.to_vec::<i32>()?, vec![0, 1, 5]);
    let cf = i.clip(Some(0.5), None)?;
    assert_eq!(cf.dtype(), DType::F32);
    assert_eq!(f32s(&cf), vec![0.5, 1.0, 8.0]);
    Ok(())
}

// ---------------------------------------------------------------- operators

#[test]
fn operators() -> R {
    let a = farr(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let b = farr(&[10.0, 20.0], &[2]);
    assert_eq!(f32s(&(&a + &b)?), vec![11.0, 22.0, 13.0, 24.0]);
    assert_eq!(f32s(&(&a - b.clone())?), vec![-9.0, -18.0, -7.0, -16.0]);
    assert_eq!(f32s(&(a.clone() * &b)?), vec![10.0, 40.0, 30.0, 80.0]);
    assert_eq!(f32s(&(a.clone() / b.clone())?), vec![0.1, 0.1, 0.3, 0.2]);
    assert_eq!(f32s(&(&a * 2.0)?), vec![2.0, 4.0, 6.0, 8.0]);
    assert_eq!(f32s(&(2.0 * &a)?), vec![2.0, 4.0, 6.0, 8.0]);
    assert_eq!(f32s(&(10.0 - &a)?), vec![9.0, 8.0, 7.0, 6.0]);
    assert_eq!(f32s(&(&a - 1i32)?), vec![0.0, 1.0, 2.0, 3.0]);
    assert_eq!(f32s(&(8i32 / &a)?), vec![8.0, 4.0, 8.0 / 3.0, 2.0]);
    assert_eq!(f32s(&(1.0 / a.clone())?), vec![1.0, 0.5, 1.0 / 3.0, 0.25]);
    assert_eq!(f32s(&(-&a)?), vec![-1.0, -2.0, -3.0, -4.0]);
    assert_eq!(f32s(&(-a.clone())?), vec![-1.0, -2.0, -3.0, -4.0]);
    let i = iarr(&[1, 2], &[2]);
    assert_eq!((&i + 1i32)?.dtype(), DType::I32);
    assert_eq!((&i * 1.5f64)?.dtype(), DType::F32);
    assert_eq!((&i / 2i32)?.to_vec::<f32>()?, vec![0.5, 1.0]);
    let chained = ((&a + 1.0f64)? * 2.0f64)?;
    assert_eq!(f32s(&chained), vec![4.0, 6.0, 8.0, 10.0]);
    assert!(matches!(&a + &farr(&[1.0, 2.0, 3.0], &[3]), Err(Error::Shape { .. })));
    Ok(())
}

// ---------------------------------------------------------------- atan2, erfinv

#[test]
fn erfinv_values() -> R {
    // scipy.special.erfinv on the float32 inputs.
    let x = farr(&[-0.999, -0.9, -0.5, -1e-3, 0.0, 0.25, 0.75, 0.99999], &[8]);
    let want = [-2.3267562, -1.1630871, -0.47693628, -8.8622724e-04, 0.0, 0.22531205, 0.81341988, 3.1232057];
    assert_close(&f32s(&x.erfinv()?), &want);
    // The ends and beyond, as SciPy.
    let edges = f32s(&farr(&[1.0, -1.0, 1.5, -2.0, f32::NAN], &[5]).erfinv()?);
    assert_eq!(&edges[..2], &[f32::INFINITY, f32::NEG_INFINITY]);
    assert!(edges[2..].iter().all(|v| v.is_nan()), "{edges:?}");
    // Integers are float-valued.
    assert_eq!(Array::from_slice(&[0i32], &[1])?.erfinv()?.dtype(), DType::F32);
    Ok(())
}

/// In f64, erf(erfinv(x)) returns x to a few ulps over the whole open interval,
/// the tails included (the Newton steps there work on erfc).
#[test]
fn erfinv_inverts_erf_in_f64() -> R {
    let xs: Vec<f64> = (1..2000)
        .map(|i| -1.0 + i as f64 / 1000.0)
        .chain([1e-300, -1e-12, 1.0 - 1e-12, -1.0 + 1e-15, 0.5 - 1e-17])
        .collect();
    let back = Array::from_slice(&xs, &[xs.len()])?.erfinv()?.erf()?.to_vec::<f64>()?;
    for (x, b) in xs.iter().zip(&back) {
        // erf's own slope near ±1 turns one ulp of the inverse into several of x.
        let tol = 4.0 * f64::EPSILON * x.abs().max(1e-300) + 1e-300;
        assert!((x - b).abs() <= tol.max(2.0 * f64::EPSILON), "erf(erfinv({x})) = {b}");
    }
    Ok(())
}

#[test]
fn atan2_values() -> R {
    // numpy.arctan2 in float32, signed zeros and infinities included.
    let y = farr(&[1.0, -1.0, 0.0, -0.0, 0.0, 3.0, -2.0, f32::INFINITY, f32::NEG_INFINITY, f32::INFINITY, 1.0], &[11]);
    let x = farr(
        &[
            -1.0,
            -1.0,
            -0.0,
            -0.0,
            1.0,
            0.0,
            f32::INFINITY,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
        ],
        &[11],
    );
    let got = f32s(&y.atan2(&x)?);
    let want = [
        2.3561945,
        -2.3561945,
        3.1415927,
        -3.1415927,
        0.0,
        1.5707964,
        -0.0,
        0.7853982,
        -2.3561945,
        2.3561945,
        f32::NAN,
    ];
    assert_close(&got, &want);
    // Signs of zero results, as C.
    assert!(got[6].is_sign_negative() && got[4].is_sign_positive());
    // Broadcasting and a scalar; integers compute in f32.
    let r = Array::from_slice(&[1i32, -1], &[2, 1])?.atan2(2)?;
    assert_eq!((r.shape(), r.dtype()), (&[2usize, 1][..], DType::F32));
    assert_close(&f32s(&r), &[0.4636476, -0.4636476]);
    // Shapes that do not broadcast are an error naming the op.
    match farr(&[1.0; 3], &[3]).atan2(farr(&[1.0; 4], &[4])) {
        Err(Error::Shape { op, .. }) => assert_eq!(op, "atan2"),
        other => panic!("expected a shape error, got {other:?}"),
    }
    Ok(())
}
