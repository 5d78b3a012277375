//! Properties: binary ops broadcast and reductions reduce exactly as a naive reference
//! does, on random small shapes (0..4 dims, sizes 0..5). Values are small integers held
//! in f32, so sums are exact and the comparison can be exact.

use crate::common;

use common::{bcast_index, naive_broadcast, numel, ravel, unravel};
use lazuli::{Array, DType};
use proptest::prelude::*;

fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..5, 0..4)
}

/// Two shapes that broadcast: a common target, each operand a suffix of it with some
/// dims replaced by 1.
fn compatible_shapes() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    shape_strategy().prop_flat_map(|target| {
        let n = target.len();
        let t1 = target.clone();
        let t2 = target.clone();
        (0..=n, 0..=n, prop::collection::vec(any::<bool>(), n), prop::collection::vec(any::<bool>(), n)).prop_map(
            move |(ra, rb, ma, mb)| {
                let a: Vec<usize> = (n - ra..n).map(|i| if ma[i] { 1 } else { t1[i] }).collect();
                let b: Vec<usize> = (n - rb..n).map(|i| if mb[i] { 1 } else { t2[i] }).collect();
                (a, b)
            },
        )
    })
}

fn data_for(shape: &[usize], seed: u64) -> Vec<f32> {
    // Deterministic small integers in -9..=9 from a seed (an LCG is plenty here).
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..numel(shape))
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 33) % 19) as f32 - 9.0
        })
        .collect()
}

/// A reference elementwise function.
type Fold = fn(f32, f32) -> f32;

fn check_binary(a_shape: &[usize], b_shape: &[usize], seed: u64) -> Result<(), TestCaseError> {
    let (da, db) = (data_for(a_shape, seed), data_for(b_shape, seed ^ 0x9e37));
    let a = Array::from_slice(&da, a_shape).unwrap();
    let b = Array::from_slice(&db, b_shape).unwrap();
    let out_shape = naive_broadcast(a_shape, b_shape).unwrap();
    let ops: [(&str, Fold); 4] =
        [("add", |x, y| x + y), ("sub", |x, y| x - y), ("mul", |x, y| x * y), ("maximum", |x, y| x.max(y))];
    for (name, f) in ops {
        let r = match name {
            "add" => a.add(&b),
            "sub" => (&b - &a).and_then(|n| n.neg()),
            "mul" => &a * &b,
            _ => a.maximum(&b),
        }
        .unwrap();
        prop_assert_eq!(r.shape(), &out_shape[..], "{}", name);
        let got = r.to_vec::<f32>().unwrap();
        let want: Vec<f32> = (0..numel(&out_shape))
            .map(|i| {
                let idx = unravel(i, &out_shape);
                f(da[bcast_index(a_shape, &idx)], db[bcast_index(b_shape, &idx)])
            })
            .collect();
        prop_assert_eq!(got, want, "{} {:?} {:?}", name, a_shape, b_shape);
    }
    let lt = a.lt(&b).unwrap();
    prop_assert_eq!(lt.dtype(), DType::Bool);
    let want: Vec<bool> = (0..numel(&out_shape))
        .map(|i| {
            let idx = unravel(i, &out_shape);
            da[bcast_index(a_shape, &idx)] < db[bcast_index(b_shape, &idx)]
        })
        .collect();
    prop_assert_eq!(lt.to_vec::<bool>().unwrap(), want);
    Ok(())
}

/// Naive reduction: (kept shape, values) for `fold` with `init` over `axes`.
fn naive_reduce(data: &[f32], shape: &[usize], axes: &[usize], init: f32, fold: Fold) -> Vec<f32> {
    let kept: Vec<usize> = shape.iter().enumerate().map(|(i, &d)| if axes.contains(&i) { 1 } else { d }).collect();
    let mut out = vec![init; numel(&kept)];
    for (i, &v) in data.iter().enumerate() {
        let mut idx = unravel(i, shape);
        for &a in axes {
            idx[a] = 0;
        }
        let o = ravel(&idx, &kept);
        out[o] = fold(out[o], v);
    }
    out
}

fn reduce_case() -> impl Strategy<Value = (Vec<usize>, Vec<bool>, bool, u64)> {
    shape_strategy().prop_flat_map(|s| {
        let n = s.len();
        (Just(s), prop::collection::vec(any::<bool>(), n), any::<bool>(), any::<u64>())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn binary_broadcasts_like_numpy((a, b) in compatible_shapes(), seed in any::<u64>()) {
        check_binary(&a, &b, seed)?;
        check_binary(&b, &a, seed)?;
    }

    #[test]
    fn incompatible_shapes_are_errors(a in shape_strategy(), b in shape_strategy()) {
        let x = Array::from_slice(&vec![0.0f32; numel(&a)], &a).unwrap();
        let y = Array::from_slice(&vec![0.0f32; numel(&b)], &b).unwrap();
        match naive_broadcast(&a, &b) {
            Some(s) => prop_assert_eq!(x.add(&y).unwrap().shape().to_vec(), s),
            None => {
                let is_shape_err = matches!(x.add(&y), Err(lazuli::Error::Shape { .. }));
                prop_assert!(is_shape_err);
                prop_assert!(x.eq(&y).is_err());
                prop_assert!(lazuli::where_(&x, &x, &y).is_err());
            }
        }
    }

    #[test]
    fn reductions_match_naive((shape, mask, keepdims, seed) in reduce_case()) {
        let data = data_for(&shape, seed);
        let x = Array::from_slice(&data, &shape).unwrap();
        let axes: Vec<usize> = (0..shape.len()).filter(|&i| mask[i]).collect();
        // Empty `axes` means all axes in the API.
        let eff: Vec<usize> = if axes.is_empty() { (0..shape.len()).collect() } else { axes.clone() };
        let iaxes: Vec<isize> = axes.iter().map(|&a| a as isize - if seed % 2 == 0 { shape.len() as isize } else { 0 }).collect();
        let kept: Vec<usize> = shape.iter().enumerate().map(|(i, &d)| if eff.contains(&i) { 1 } else { d }).collect();
        let out: Vec<usize> = if keepdims {
            kept.clone()
        } else {
            shape.iter().enumerate().filter(|(i, _)| !eff.contains(i)).map(|(_, &d)| d).collect()
        };
        let count: usize = eff.iter().map(|&a| shape[a]).product();

        let s = x.sum(&iaxes, keepdims).unwrap();
        prop_assert_eq!(s.shape(), &out[..]);
        prop_assert_eq!(s.to_vec::<f32>().unwrap(), naive_reduce(&data, &shape, &eff, 0.0, |a, b| a + b));

        let m = x.max(&iaxes, keepdims);
        if count == 0 {
            prop_assert!(m.is_err());
        } else {
            let m = m.unwrap();
            prop_assert_eq!(m.shape(), &out[..]);
            prop_assert_eq!(m.to_vec::<f32>().unwrap(), naive_reduce(&data, &shape, &eff, f32::NEG_INFINITY, f32::max));
            let mn = x.min(&iaxes, keepdims).unwrap();
            prop_assert_eq!(mn.to_vec::<f32>().unwrap(), naive_reduce(&data, &shape, &eff, f32::INFINITY, f32::min));
        }

        let any = x.gt(0.0).unwrap().any(&iaxes, keepdims).unwrap();
        prop_assert_eq!(any.shape(), &out[..]);
        let want: Vec<bool> = naive_reduce(&data, &shape, &eff, 0.0, |a, b| if b > 0.0 { 1.0 } else { a })
            .into_iter().map(|v| v != 0.0).collect();
        prop_assert_eq!(any.to_vec::<bool>().unwrap(), want);

        let mean = x.mean(&iaxes, keepdims).unwrap();
        prop_assert_eq!(mean.shape(), &out[..]);
        let sums = naive_reduce(&data, &shape, &eff, 0.0, |a, b| a + b);
        for (g, w) in mean.to_vec::<f32>().unwrap().into_iter().zip(sums) {
            let w = w / count as f32;
            prop_assert!(g == w || (g.is_nan() && w.is_nan()) || (g - w).abs() <= 1e-5 * w.abs().max(1.0), "{} vs {}", g, w);
        }
    }
}
