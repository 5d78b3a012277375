//! Properties: shape ops agree with a naive element-by-element reference on small random
//! shapes (including empty axes).

use lazuli::{Array, SliceArg, concatenate};
use proptest::prelude::*;

/// Row-major multi-indices of `shape`, in order.
fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = shape.iter().product();
    (0..n)
        .map(|mut f| {
            let mut idx = vec![0; shape.len()];
            for ax in (0..shape.len()).rev() {
                idx[ax] = f % shape[ax];
                f /= shape[ax];
            }
            idx
        })
        .collect()
}

fn flat(shape: &[usize], idx: &[usize]) -> usize {
    idx.iter().zip(shape).fold(0, |acc, (&i, &d)| acc * d + i)
}

fn data(shape: &[usize]) -> (Array, Vec<i32>) {
    let n: usize = shape.iter().product();
    let v: Vec<i32> = (0..n as i32).collect();
    (Array::from_slice(&v, shape).unwrap(), v)
}

/// Positions `x[start:stop:step]` visits on an axis of length `n`, by walking it the way
/// CPython does.
fn slice_positions(start: Option<isize>, stop: Option<isize>, step: isize, n: usize) -> Vec<usize> {
    let n = n as isize;
    let adjust = |v: isize, lo: isize, hi: isize| {
        let v = if v < 0 { v + n } else { v };
        v.clamp(lo, hi)
    };
    let (s, e) = if step > 0 {
        (start.map_or(0, |v| adjust(v, 0, n)), stop.map_or(n, |v| adjust(v, 0, n)))
    } else {
        (start.map_or(n - 1, |v| adjust(v, -1, n - 1)), stop.map_or(-1, |v| adjust(v, -1, n - 1)))
    };
    let mut out = Vec::new();
    let mut i = s;
    while (step > 0 && i < e) || (step < 0 && i > e) {
        out.push(i as usize);
        i += step;
    }
    out
}

fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..4, 1..=4)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn transpose_matches(shape in shape_strategy(), seed in any::<u64>()) {
        let nd = shape.len();
        // A permutation from the seed (Fisher-Yates with a tiny LCG).
        let mut perm: Vec<usize> = (0..nd).collect();
        let mut s = seed;
        for i in (1..nd).rev() {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            perm.swap(i, (s >> 33) as usize % (i + 1));
        }
        let (a, v) = data(&shape);
        let axes: Vec<isize> = perm.iter().map(|&p| p as isize).collect();
        let t = a.transpose(&axes).unwrap();
        let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
        prop_assert_eq!(t.shape(), &out_shape[..]);
        let expect: Vec<i32> = indices(&out_shape)
            .iter()
            .map(|o| {
                let mut src = vec![0; nd];
                for (k, &p) in perm.iter().enumerate() {
                    src[p] = o[k];
                }
                v[flat(&shape, &src)]
            })
            .collect();
        prop_assert_eq!(t.to_vec::<i32>().unwrap(), expect);
    }

    #[test]
    fn slice_matches(
        shape in shape_strategy(),
        args in prop::collection::vec(
            (prop::option::of(-6isize..6), prop::option::of(-6isize..6), prop_oneof![-3isize..0, 1isize..4]),
            0..=4,
        ),
    ) {
        let args: Vec<_> = args.into_iter().take(shape.len()).collect();
        let (a, v) = data(&shape);
        let sargs: Vec<SliceArg> = args.iter().map(|&(s, e, st)| SliceArg::new(s, e, st)).collect();
        let out = a.slice(&sargs).unwrap();
        let pos: Vec<Vec<usize>> = (0..shape.len())
            .map(|ax| match args.get(ax) {
                Some(&(s, e, st)) => slice_positions(s, e, st, shape[ax]),
                None => (0..shape[ax]).collect(),
            })
            .collect();
        let out_shape: Vec<usize> = pos.iter().map(|p| p.len()).collect();
        prop_assert_eq!(out.shape(), &out_shape[..]);
        let expect: Vec<i32> = indices(&out_shape)
            .iter()
            .map(|o| {
                let src: Vec<usize> = o.iter().enumerate().map(|(ax, &i)| pos[ax][i]).collect();
                v[flat(&shape, &src)]
            })
            .collect();
        prop_assert_eq!(out.to_vec::<i32>().unwrap(), expect);
    }

    #[test]
    fn flip_matches(shape in shape_strategy(), mask in any::<u8>()) {
        let (a, v) = data(&shape);
        let axes: Vec<isize> = (0..shape.len()).filter(|i| mask >> i & 1 == 1).map(|i| i as isize).collect();
        let f = a.flip(&axes).unwrap();
        let flipped = |ax: usize| axes.is_empty() || axes.contains(&(ax as isize));
        let expect: Vec<i32> = indices(&shape)
            .iter()
            .map(|o| {
                let src: Vec<usize> =
                    o.iter().enumerate().map(|(ax, &i)| if flipped(ax) { shape[ax] - 1 - i } else { i }).collect();
                v[flat(&shape, &src)]
            })
            .collect();
        prop_assert_eq!(f.to_vec::<i32>().unwrap(), expect);
    }

    #[test]
    fn concatenate_matches(shape in shape_strategy(), extra in prop::collection::vec(0usize..4, 1..4), axis in 0usize..4) {
        let axis = axis % shape.len();
        // Pieces share `shape` except along `axis`.
        let pieces: Vec<(Array, Vec<usize>, i32)> = std::iter::once(shape[axis])
            .chain(extra)
            .enumerate()
            .map(|(k, len)| {
                let mut s = shape.clone();
                s[axis] = len;
                let n: usize = s.iter().product();
                let base = 1000 * k as i32;
                let v: Vec<i32> = (0..n as i32).map(|x| base + x).collect();
                (Array::from_slice(&v, &s).unwrap(), s, base)
            })
            .collect();
        let refs: Vec<&Array> = pieces.iter().map(|p| &p.0).collect();
        let out = concatenate(&refs, axis as isize - shape.len() as isize).unwrap();
        let mut out_shape = shape.clone();
        out_shape[axis] = pieces.iter().map(|p| p.1[axis]).sum();
        prop_assert_eq!(out.shape(), &out_shape[..]);
        let expect: Vec<i32> = indices(&out_shape)
            .iter()
            .map(|o| {
                let mut i = o[axis];
                for (_, s, base) in &pieces {
                    if i < s[axis] {
                        let mut src = o.clone();
                        src[axis] = i;
                        return base + flat(s, &src) as i32;
                    }
                    i -= s[axis];
                }
                unreachable!()
            })
            .collect();
        prop_assert_eq!(out.to_vec::<i32>().unwrap(), expect);
    }

    #[test]
    fn reshape_keeps_row_major_order(shape in shape_strategy(), split_at in 0usize..4) {
        let (a, v) = data(&shape);
        // Regroup the axes into two: product of the first k and of the rest.
        let k = split_at % (shape.len() + 1);
        let first: usize = shape[..k].iter().product();
        let rest: usize = shape[k..].iter().product();
        let r = a.reshape(&[first as isize, rest as isize]).unwrap();
        prop_assert_eq!(r.shape(), &[first, rest][..]);
        prop_assert_eq!(r.to_vec::<i32>().unwrap(), v.clone());
        // A reshape of a transposed view materialises the transposed order.
        let t = a.transpose(&[]).unwrap().reshape(&[-1]).unwrap();
        let rev: Vec<usize> = shape.iter().rev().copied().collect();
        let expect: Vec<i32> = indices(&rev)
            .iter()
            .map(|o| {
                let src: Vec<usize> = o.iter().rev().copied().collect();
                v[flat(&shape, &src)]
            })
            .collect();
        prop_assert_eq!(t.to_vec::<i32>().unwrap(), expect);
    }
}

/// A materialised reference array.
#[derive(Clone, Debug)]
struct Naive {
    shape: Vec<usize>,
    v: Vec<i32>,
}

impl Naive {
    fn map(&self, shape: Vec<usize>, src: impl Fn(&[usize]) -> Vec<usize>) -> Naive {
        let v = indices(&shape).iter().map(|o| self.v[flat(&self.shape, &src(o))]).collect();
        Naive { shape, v }
    }
}

#[derive(Clone, Debug)]
enum ViewOp {
    Reverse,
    Slice(Option<isize>, Option<isize>, isize),
    Flip(usize),
    Broadcast(usize),
}

fn apply(op: &ViewOp, a: &Array, n: &Naive) -> (Array, Naive) {
    let nd = n.shape.len();
    match *op {
        ViewOp::Reverse => {
            let shape = n.shape.iter().rev().copied().collect();
            (a.transpose(&[]).unwrap(), n.map(shape, |o| o.iter().rev().copied().collect()))
        }
        ViewOp::Slice(s, e, st) => {
            let pos = slice_positions(s, e, st, n.shape[0]);
            let mut shape = n.shape.clone();
            shape[0] = pos.len();
            let out = n.map(shape, |o| {
                let mut src = o.to_vec();
                src[0] = pos[o[0]];
                src
            });
            (a.slice(&[SliceArg::new(s, e, st)]).unwrap(), out)
        }
        ViewOp::Flip(ax) => {
            let ax = ax % nd;
            let d = n.shape[ax];
            let out = n.map(n.shape.clone(), |o| {
                let mut src = o.to_vec();
                src[ax] = d - 1 - o[ax];
                src
            });
            (a.flip(&[ax as isize]).unwrap(), out)
        }
        ViewOp::Broadcast(k) => {
            let mut shape = vec![k];
            shape.extend_from_slice(&n.shape);
            let out = n.map(shape.clone(), |o| o[1..].to_vec());
            (a.broadcast_to(&shape).unwrap(), out)
        }
    }
}

fn view_op() -> impl Strategy<Value = ViewOp> {
    prop_oneof![
        Just(ViewOp::Reverse),
        (prop::option::of(-5isize..5), prop::option::of(-5isize..5), prop_oneof![-2isize..0, 1isize..3])
            .prop_map(|(s, e, st)| ViewOp::Slice(s, e, st)),
        (0usize..4).prop_map(ViewOp::Flip),
        (1usize..3).prop_map(ViewOp::Broadcast),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, .. ProptestConfig::default() })]

    /// Chains of views fold into one node; the values must match applying each op in turn.
    #[test]
    fn view_chains_match(shape in prop::collection::vec(1usize..4, 1..=3), ops in prop::collection::vec(view_op(), 1..5)) {
        let (mut a, v) = data(&shape);
        let mut n = Naive { shape: shape.clone(), v };
        for op in &ops {
            (a, n) = apply(op, &a, &n);
        }
        prop_assert_eq!(a.shape(), &n.shape[..]);
        prop_assert_eq!(a.to_vec::<i32>().unwrap(), n.v);
    }
}
