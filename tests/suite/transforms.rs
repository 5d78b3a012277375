//! Function transforms: every differentiable op's vjp and jvp against central finite
//! differences in f64 on the CPU, `u · jvp(v) = vjp(u) · v`, property tests over random
//! broadcast shapes and axes, second derivatives against closed forms, the GPU's rules
//! against the CPU's in f32, custom rules, and the errors.

use crate::common;

use common::{devices, gpu_available, on};
use lazuli::{Array, DType, Device, Error, Reduction, Result, SliceArg};
use proptest::prelude::*;

type F = Box<dyn Fn(&[Array]) -> Result<Array>>;

/// Deterministic values in `[lo, hi)`.
fn vals(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    common::values(n, seed, 0.0, 1.0).into_iter().map(|u| lo + (hi - lo) * u as f64).collect()
}

fn arr(v: &[f64], shape: &[usize]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// A function of float inputs with the shapes and value ranges it is checked at.
struct Case {
    name: String,
    inputs: Vec<(Vec<usize>, f64, f64)>,
    f: F,
}

fn case(name: &str, inputs: &[(&[usize], f64, f64)], f: impl Fn(&[Array]) -> Result<Array> + 'static) -> Case {
    Case {
        name: name.into(),
        inputs: inputs.iter().map(|(s, lo, hi)| (s.to_vec(), *lo, *hi)).collect(),
        f: Box::new(f),
    }
}

const EPS: f64 = 1e-6;

fn eval_f(f: &F, xs: &[Vec<f64>], shapes: &[Vec<usize>]) -> Vec<f64> {
    let arrays: Vec<Array> = xs.iter().zip(shapes).map(|(x, s)| arr(x, s)).collect();
    f(&arrays).unwrap().astype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

fn close(what: &str, got: f64, want: f64, tol: f64) {
    assert!((got - want).abs() <= tol * (1.0 + want.abs()), "{what}: got {got}, want {want}");
}

/// vjp and jvp of `c.f` at random points against central differences, and their
/// consistency, in f64 on the CPU.
fn check(c: &Case, seed: u64) {
    let shapes: Vec<Vec<usize>> = c.inputs.iter().map(|(s, _, _)| s.clone()).collect();
    let xs: Vec<Vec<f64>> = c
        .inputs
        .iter()
        .enumerate()
        .map(|(i, (s, lo, hi))| vals(s.iter().product(), seed * 31 + i as u64, *lo, *hi))
        .collect();
    let arrays: Vec<Array> = xs.iter().zip(&shapes).map(|(x, s)| arr(x, s)).collect();
    let f = &c.f;
    let y = f(&arrays).unwrap();
    assert_eq!(y.dtype(), DType::F64, "{}: output dtype", c.name);
    let u = vals(y.size(), seed * 7 + 100, -1.0, 1.0);
    let ua = arr(&u, y.shape());
    let call = |x: &[Array]| Ok(vec![f(x)?]);
    let (_, g) = lazuli::vjp(call, &arrays, &[ua]).unwrap();
    let vs: Vec<Vec<f64>> =
        xs.iter().enumerate().map(|(i, x)| vals(x.len(), seed * 13 + 50 + i as u64, -1.0, 1.0)).collect();
    let va: Vec<Array> = vs.iter().zip(&shapes).map(|(v, s)| arr(v, s)).collect();
    let (_, t) = lazuli::jvp(call, &arrays, &va).unwrap();
    let t = t[0].to_vec::<f64>().unwrap();

    // vjp: d(u . f)/dx_ij by central differences.
    for (i, x) in xs.iter().enumerate() {
        let gi = g[i].to_vec::<f64>().unwrap();
        assert_eq!(g[i].shape(), &shapes[i][..], "{}: gradient {i} shape", c.name);
        for j in 0..x.len() {
            let mut hi = xs.clone();
            hi[i][j] += EPS;
            let mut lo = xs.clone();
            lo[i][j] -= EPS;
            let num = (dot(&u, &eval_f(f, &hi, &shapes)) - dot(&u, &eval_f(f, &lo, &shapes))) / (2.0 * EPS);
            close(&format!("{} vjp input {i} element {j}", c.name), gi[j], num, 1e-5);
        }
    }
    // jvp: (f(x + eps v) - f(x - eps v)) / 2 eps.
    let step = |sign: f64| -> Vec<Vec<f64>> {
        xs.iter().zip(&vs).map(|(x, v)| x.iter().zip(v).map(|(a, b)| a + sign * EPS * b).collect()).collect()
    };
    let (fp, fm) = (eval_f(f, &step(1.0), &shapes), eval_f(f, &step(-1.0), &shapes));
    for k in 0..t.len() {
        close(&format!("{} jvp element {k}", c.name), t[k], (fp[k] - fm[k]) / (2.0 * EPS), 1e-5);
    }
    // u . J v both ways.
    let lhs = dot(&u, &t);
    let rhs: f64 = g.iter().zip(&vs).map(|(gi, v)| dot(&gi.to_vec::<f64>().unwrap(), v)).sum();
    close(&format!("{} u.jvp = vjp.v", c.name), lhs, rhs, 1e-9);
}

fn unary_cases() -> Vec<Case> {
    let s: &[usize] = &[2, 3];
    macro_rules! u {
        ($($name:ident($lo:expr, $hi:expr)),* $(,)?) => {
            vec![$(case(stringify!($name), &[(s, $lo, $hi)], |x| x[0].$name()),)*]
        };
    }
    let mut v = u![
        neg(-2.0, 2.0),
        abs(-2.0, 2.0),
        square(-2.0, 2.0),
        exp(-2.0, 2.0),
        expm1(-2.0, 2.0),
        log(0.5, 3.0),
        log1p(-0.5, 2.0),
        log2(0.5, 3.0),
        sqrt(0.5, 3.0),
        rsqrt(0.5, 3.0),
        reciprocal(0.5, 3.0),
        sin(-3.0, 3.0),
        cos(-3.0, 3.0),
        tan(-1.2, 1.2),
        tanh(-2.0, 2.0),
        sigmoid(-4.0, 4.0),
        erf(-2.0, 2.0),
        erfinv(-0.9, 0.9),
        floor(-3.0, 3.0),
        ceil(-3.0, 3.0),
        round(-3.0, 3.0),
        sign(-2.0, 2.0),
        relu(-2.0, 2.0),
        gelu(-3.0, 3.0),
        silu(-3.0, 3.0),
        softplus(-5.0, 5.0),
    ];
    v.push(case("leaky_relu", &[(s, -2.0, 2.0)], |x| x[0].leaky_relu(0.1)));
    v.push(case("clip", &[(s, -2.0, 2.0)], |x| x[0].clip(Some(-1.0), Some(1.0))));
    v.push(case("exp(sin)*x", &[(s, -2.0, 2.0)], |x| x[0].sin()?.exp()?.mul(&x[0])));
    v
}

fn binary_cases() -> Vec<Case> {
    let (a, b): (&[usize], &[usize]) = (&[2, 3], &[3]);
    let (c, d): (&[usize], &[usize]) = (&[2, 1], &[1, 3]);
    macro_rules! bin {
        ($($name:ident($lo:expr, $hi:expr; $lo2:expr, $hi2:expr)),* $(,)?) => {
            vec![$(
                case(concat!(stringify!($name), " [2,3]x[3]"), &[(a, $lo, $hi), (b, $lo2, $hi2)], |x| x[0].$name(&x[1])),
                case(concat!(stringify!($name), " [2,1]x[1,3]"), &[(c, $lo, $hi), (d, $lo2, $hi2)], |x| x[0].$name(&x[1])),
            )*]
        };
    }
    let mut v = bin![
        add(-2.0, 2.0; -2.0, 2.0), sub(-2.0, 2.0; -2.0, 2.0), mul(-2.0, 2.0; -2.0, 2.0),
        div(-2.0, 2.0; 0.5, 2.0), pow(0.5, 2.0; -2.0, 2.0), remainder(-3.0, 3.0; 0.7, 1.3),
        maximum(-2.0, 2.0; -2.0, 2.0), minimum(-2.0, 2.0; -2.0, 2.0), atan2(-2.0, 2.0; -2.0, 2.0),
        logaddexp(-3.0, 3.0; -3.0, 3.0), floor_divide(-3.0, 3.0; 0.7, 1.3),
    ];
    v.push(case("scalar pow", &[(a, 0.5, 2.0)], |x| x[0].pow(3.0)));
    v.push(case("where", &[(a, -1.0, 1.0), (b, -2.0, 2.0), (c, -2.0, 2.0)], |x| {
        lazuli::where_(&x[0].gt(0.0)?, &x[1], &x[2])
    }));
    v
}

fn view_cases() -> Vec<Case> {
    let s: &[usize] = &[2, 3, 4];
    vec![
        case("reshape", &[(s, -1.0, 1.0)], |x| x[0].reshape(&[4, -1])?.sin()),
        case("transpose", &[(s, -1.0, 1.0)], |x| x[0].transpose(&[2, 0, 1])?.exp()),
        case("swapaxes", &[(s, -1.0, 1.0)], |x| x[0].swapaxes(0, 2)?.mul(&x[0].swapaxes(0, 2)?)),
        case("t", &[(&[3, 4], -1.0, 1.0)], |x| x[0].t()?.sin()),
        case("slice step 2", &[(s, -1.0, 1.0)], |x| {
            x[0].slice(&[SliceArg::all(), SliceArg::new(Some(1), None, 1), SliceArg::new(None, None, 2)])?.exp()
        }),
        case("slice negative step", &[(s, -1.0, 1.0)], |x| {
            x[0].slice(&[SliceArg::new(None, None, -1), SliceArg::all(), SliceArg::new(Some(3), Some(0), -2)])?.exp()
        }),
        case("flip", &[(s, -1.0, 1.0)], |x| x[0].flip(&[1])?.mul(&x[0])),
        case("broadcast_to", &[(&[3, 1], -1.0, 1.0)], |x| x[0].broadcast_to(&[2, 3, 4])?.sin()),
        case("expand_squeeze", &[(&[3, 4], -1.0, 1.0)], |x| x[0].expand_dims(&[0])?.squeeze(&[0])?.exp()),
        case("flatten", &[(s, -1.0, 1.0)], |x| x[0].flatten()?.sin()),
        case("pad", &[(&[2, 3], -1.0, 1.0)], |x| x[0].pad(&[(1, 0), (2, 1)], 0.5)?.exp()),
        case("tile", &[(&[2, 3], -1.0, 1.0)], |x| x[0].tile(&[2, 1, 2])?.sin()),
        case("repeat", &[(&[2, 3], -1.0, 1.0)], |x| x[0].repeat(2, Some(1))?.sin()),
        case("triu", &[(&[3, 3], -1.0, 1.0)], |x| x[0].triu(0)?.exp()),
        case("astype f64", &[(&[3], -1.0, 1.0)], |x| x[0].astype(DType::F64)?.sin()),
    ]
}

fn reduce_cases() -> Vec<Case> {
    let s: &[usize] = &[2, 3, 4];
    vec![
        case("sum all", &[(s, -1.0, 1.0)], |x| x[0].sin()?.sum(&[], false)),
        case("sum axis keepdims", &[(s, -1.0, 1.0)], |x| x[0].sum(&[1], true)?.sin()),
        case("sum axes", &[(s, -1.0, 1.0)], |x| x[0].sum(&[0, 2], false)?.sin()),
        case("prod", &[(s, 0.5, 1.5)], |x| x[0].prod(&[2], false)),
        case("prod signed", &[(&[6], -1.5, 1.5)], |x| x[0].prod(&[], false)),
        case("max", &[(s, -1.0, 1.0)], |x| x[0].max(&[1], false)),
        case("min keepdims", &[(s, -1.0, 1.0)], |x| x[0].min(&[0, 2], true)),
        case("mean", &[(s, -1.0, 1.0)], |x| x[0].mean(&[2], false)),
        case("var", &[(s, -1.0, 1.0)], |x| x[0].var(&[1], false, 1)),
        case("std", &[(s, -1.0, 1.0)], |x| x[0].std(&[2], true, 0)),
        case("logsumexp", &[(s, -3.0, 3.0)], |x| x[0].logsumexp(&[2], false)),
        case("softmax", &[(s, -3.0, 3.0)], |x| x[0].softmax(&[-1])),
        case("log_softmax", &[(s, -3.0, 3.0)], |x| x[0].log_softmax(&[1])),
        case("cumsum", &[(s, -1.0, 1.0)], |x| x[0].cumsum(1, false)?.sin()),
        case("cumsum reverse", &[(s, -1.0, 1.0)], |x| x[0].cumsum(2, true)?.sin()),
        case("cumprod", &[(s, 0.5, 1.5)], |x| x[0].cumprod(2, false)),
        case("cumprod reverse", &[(s, 0.5, 1.5)], |x| x[0].cumprod(1, true)),
        case("cummax", &[(s, -1.0, 1.0)], |x| x[0].cummax(2, false)),
        case("cummax reverse", &[(s, -1.0, 1.0)], |x| x[0].cummax(2, true)),
        case("cummin", &[(s, -1.0, 1.0)], |x| x[0].cummin(1, false)),
        case("cummin reverse", &[(s, -1.0, 1.0)], |x| x[0].cummin(0, true)),
        case("argmax picks", &[(&[3, 4], -1.0, 1.0)], |x| {
            let i = x[0].argmax(1, true)?;
            x[0].take_along_axis(&i.astype(DType::I32)?, 1)
        }),
    ]
}

fn join_index_cases() -> Vec<Case> {
    let idx = || Array::from_slice(&[2i32, 0, -1, 2], &[4]).unwrap();
    vec![
        case("concatenate", &[(&[2, 3], -1.0, 1.0), (&[2, 2], -1.0, 1.0)], |x| {
            lazuli::concatenate(&[&x[0], &x[1], &x[0]], 1)?.sin()
        }),
        case("stack", &[(&[2, 3], -1.0, 1.0), (&[2, 3], -1.0, 1.0)], |x| lazuli::stack(&[&x[0], &x[1]], 0)?.exp()),
        case("split", &[(&[4, 3], -1.0, 1.0)], |x| lazuli::split(&x[0], 2, 0)?[1].sin()),
        case("take", &[(&[3, 2], -1.0, 1.0)], move |x| x[0].take(&idx(), Some(0))?.sin()),
        case("take flat", &[(&[3, 2], -1.0, 1.0)], move |x| x[0].take(&idx(), None)?.exp()),
        case("take_along_axis", &[(&[2, 3], -1.0, 1.0)], |x| {
            let i = Array::from_slice(&[0i32, 2, 2, 1, 0, 1], &[2, 3])?;
            x[0].take_along_axis(&i, 1)?.sin()
        }),
        case("scatter", &[(&[4, 2], -1.0, 1.0), (&[2, 2], -1.0, 1.0)], |x| {
            let i = Array::from_slice(&[3i32, 0, 1, 3], &[2, 2])?;
            x[0].scatter(&i, &x[1], 0)?.sin()
        }),
        case("scatter_add", &[(&[4, 2], -1.0, 1.0), (&[3, 2], -1.0, 1.0)], |x| {
            let i = Array::from_slice(&[3i32, 0, 3, 3, -1, 1], &[3, 2])?;
            x[0].scatter_add(&i, &x[1], 0)?.sin()
        }),
    ]
}

fn matmul_cases() -> Vec<Case> {
    vec![
        case("matmul", &[(&[3, 4], -1.0, 1.0), (&[4, 2], -1.0, 1.0)], |x| x[0].matmul(&x[1])),
        case("matmul a^T", &[(&[4, 3], -1.0, 1.0), (&[4, 2], -1.0, 1.0)], |x| x[0].t()?.matmul(&x[1])),
        case("matmul b^T", &[(&[3, 4], -1.0, 1.0), (&[2, 4], -1.0, 1.0)], |x| x[0].matmul(&x[1].t()?)),
        case("matmul both^T", &[(&[4, 3], -1.0, 1.0), (&[2, 4], -1.0, 1.0)], |x| x[0].t()?.matmul(&x[1].t()?)),
        case("matmul batched broadcast", &[(&[2, 3, 4], -1.0, 1.0), (&[1, 4, 2], -1.0, 1.0)], |x| x[0].matmul(&x[1])),
        case("matmul batch rank", &[(&[2, 3, 4], -1.0, 1.0), (&[4, 2], -1.0, 1.0)], |x| x[0].matmul(&x[1])?.sin()),
        case("matmul vector", &[(&[4], -1.0, 1.0), (&[4, 3], -1.0, 1.0)], |x| x[0].matmul(&x[1])),
        case("outer", &[(&[3], -1.0, 1.0), (&[2], -1.0, 1.0)], |x| x[0].outer(&x[1])),
        case("mlp", &[(&[4, 3], -1.0, 1.0), (&[3, 5], -1.0, 1.0), (&[5], -1.0, 1.0)], |x| {
            let labels = Array::from_slice(&[0i32, 4, 2, 1], &[4])?;
            let logits = x[0].matmul(&x[1])?.add(&x[2])?.tanh()?;
            lazuli::cross_entropy(&logits, &labels, Reduction::Mean)
        }),
        case("mse", &[(&[4, 3], -1.0, 1.0), (&[3], -1.0, 1.0)], |x| lazuli::mse(&x[0], &x[1], Reduction::Sum)),
        case("shared subexpression", &[(&[3], -1.0, 1.0)], |x| {
            let y = x[0].sin()?;
            y.mul(&y)?.add(&y)
        }),
    ]
}

#[test]
fn finite_differences_unary() {
    for (i, c) in unary_cases().iter().enumerate() {
        check(c, i as u64);
    }
}

#[test]
fn finite_differences_binary() {
    for (i, c) in binary_cases().iter().enumerate() {
        check(c, i as u64);
    }
}

#[test]
fn finite_differences_views() {
    for (i, c) in view_cases().iter().enumerate() {
        check(c, i as u64);
    }
}

#[test]
fn finite_differences_reductions_and_scans() {
    for (i, c) in reduce_cases().iter().enumerate() {
        check(c, i as u64);
    }
}

#[test]
fn finite_differences_join_and_index() {
    for (i, c) in join_index_cases().iter().enumerate() {
        check(c, i as u64);
    }
}

#[test]
fn finite_differences_matmul_and_losses() {
    for (i, c) in matmul_cases().iter().enumerate() {
        check(c, i as u64);
    }
}

/// Broadcast shape pairs: `b` is `a` with some axes set to 1 and some leading axes dropped.
fn broadcast_pair() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    prop::collection::vec((1usize..4, any::<bool>()), 1..4).prop_flat_map(|dims| {
        let a: Vec<usize> = dims.iter().map(|d| d.0).collect();
        let b: Vec<usize> = dims.iter().map(|&(d, one)| if one { 1 } else { d }).collect();
        (Just(a), 0..=b.len()).prop_map(move |(a, drop)| (a, b[drop..].to_vec()))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn prop_binary_broadcasting((a, b) in broadcast_pair(), op in 0usize..4, swap in any::<bool>(), seed in 0u64..1000) {
        let (a, b) = if swap { (b, a) } else { (a, b) };
        let c = case("broadcast op", &[(&a, 0.5, 2.0), (&b, 0.5, 2.0)], move |x| match op {
            0 => x[0].add(&x[1]),
            1 => x[0].mul(&x[1]),
            2 => x[0].div(&x[1]),
            _ => x[0].pow(&x[1]),
        });
        check(&c, seed);
    }

    #[test]
    fn prop_reductions_over_axes(
        shape in prop::collection::vec(1usize..4, 1..4),
        mask in prop::collection::vec(any::<bool>(), 4),
        keepdims in any::<bool>(),
        op in 0usize..5,
        seed in 0u64..1000,
    ) {
        let axes: Vec<isize> = (0..shape.len()).filter(|&i| mask[i]).map(|i| i as isize).collect();
        let c = case("reduce", &[(&shape, 0.5, 1.5)], move |x| match op {
            0 => x[0].sum(&axes, keepdims),
            1 => x[0].prod(&axes, keepdims),
            2 => x[0].max(&axes, keepdims),
            3 => x[0].mean(&axes, keepdims),
            _ => x[0].logsumexp(&axes, keepdims),
        });
        check(&c, seed);
    }
}

fn scalar(v: f64) -> Array {
    Array::from_slice(&[v], &[]).unwrap()
}

fn grad1(f: impl Fn(&Array) -> Result<Array> + 'static) -> impl Fn(&Array) -> Result<Array> {
    let g = lazuli::grad(move |x: &[Array]| f(&x[0]), &[0]);
    move |x: &Array| Ok(g(std::slice::from_ref(x))?.remove(0))
}

#[test]
fn second_derivatives_match_closed_forms() {
    for &x in &[-1.3, 0.2, 2.1] {
        // sin'' = -sin; tanh'' = -2 tanh (1 - tanh^2).
        let d2 = grad1(grad1(|x| x.sin()));
        close("sin''", d2(&scalar(x)).unwrap().item::<f64>().unwrap(), -x.sin(), 1e-12);
        let d2 = grad1(grad1(|x| x.tanh()));
        let t = x.tanh();
        close("tanh''", d2(&scalar(x)).unwrap().item::<f64>().unwrap(), -2.0 * t * (1.0 - t * t), 1e-12);
        // The third derivative through three nested traces: sin''' = -cos.
        let d3 = grad1(grad1(grad1(|x| x.sin())));
        close("sin'''", d3(&scalar(x)).unwrap().item::<f64>().unwrap(), -x.cos(), 1e-12);
    }

    // Softmax cross-entropy: the gradient is p - onehot, the Hessian diag(p) - p p^T;
    // H v by jvp of the gradient (forward over reverse) and by vjp of the gradient.
    let z = [0.3, -1.2, 2.0, 0.5];
    let v = [1.0, -0.5, 0.25, 2.0];
    let ce = |x: &[Array]| {
        let labels = Array::from_slice(&[2i32], &[1])?;
        lazuli::cross_entropy(&x[0].reshape(&[1, 4])?, &labels, Reduction::Sum)
    };
    let g = lazuli::grad(ce, &[0]);
    let m = z.iter().cloned().fold(f64::MIN, f64::max);
    let e: Vec<f64> = z.iter().map(|x| (x - m).exp()).collect();
    let p: Vec<f64> = e.iter().map(|x| x / e.iter().sum::<f64>()).collect();
    let pv = dot(&p, &v);
    let hv: Vec<f64> = (0..4).map(|i| p[i] * v[i] - p[i] * pv).collect();
    let grad_vals = g(&[arr(&z, &[4])]).unwrap()[0].to_vec::<f64>().unwrap();
    for i in 0..4 {
        close("ce grad", grad_vals[i], p[i] - if i == 2 { 1.0 } else { 0.0 }, 1e-12);
    }
    let (_, jv) = lazuli::jvp(|x| g(x), &[arr(&z, &[4])], &[arr(&v, &[4])]).unwrap();
    let (_, vj) = lazuli::vjp(|x| g(x), &[arr(&z, &[4])], &[arr(&v, &[4])]).unwrap();
    for (name, got) in [("jvp of grad", &jv[0]), ("vjp of grad", &vj[0])] {
        let got = got.to_vec::<f64>().unwrap();
        for i in 0..4 {
            close(name, got[i], hv[i], 1e-12);
        }
    }

    // A matmul chain f(W) = sum((A W B)^2): grad 2 A^T (A W B) B^T, Hessian along V:
    // 2 A^T (A V B) B^T.
    let a = arr(&vals(6, 1, -1.0, 1.0), &[3, 2]);
    let b = arr(&vals(8, 2, -1.0, 1.0), &[2, 4]);
    let w = arr(&vals(4, 3, -1.0, 1.0), &[2, 2]);
    let dir = arr(&vals(4, 4, -1.0, 1.0), &[2, 2]);
    let (a2, b2) = (a.clone(), b.clone());
    let f = move |x: &[Array]| a2.matmul(&x[0])?.matmul(&b2)?.square()?.sum(&[], false);
    let gf = lazuli::grad(f, &[0]);
    let (grad_w, hess_v) = lazuli::jvp(|x| gf(x), std::slice::from_ref(&w), std::slice::from_ref(&dir)).unwrap();
    let chain = |m: &Array| a.t()?.matmul(&a.matmul(m)?.matmul(&b)?)?.matmul(&b.t()?)?.mul(2.0);
    let want_g = chain(&w).unwrap().to_vec::<f64>().unwrap();
    let want_h = chain(&dir).unwrap().to_vec::<f64>().unwrap();
    for (got, want) in [(&grad_w[0], want_g), (&hess_v[0], want_h)] {
        for (g, w) in got.to_vec::<f64>().unwrap().iter().zip(&want) {
            close("matmul chain", *g, *w, 1e-12);
        }
    }
}

#[test]
fn zero_derivatives_of_kinks_and_integers() {
    // prod with zeros: the product of the others at a lone zero, 0 with two zeros.
    let g = lazuli::grad(|x| x[0].prod(&[], false), &[0]);
    let one_zero = g(&[arr(&[2.0, 0.0, 3.0], &[3])]).unwrap()[0].to_vec::<f64>().unwrap();
    assert_eq!(one_zero, vec![0.0, 6.0, 0.0]);
    let two_zeros = g(&[arr(&[2.0, 0.0, 0.0], &[3])]).unwrap()[0].to_vec::<f64>().unwrap();
    assert_eq!(two_zeros, vec![0.0, 0.0, 0.0]);
    // max shares the gradient among ties.
    let g = lazuli::grad(|x| x[0].max(&[], false), &[0]);
    assert_eq!(g(&[arr(&[1.0, 3.0, 3.0], &[3])]).unwrap()[0].to_vec::<f64>().unwrap(), vec![0.0, 0.5, 0.5]);
    // Nothing flows through integers: a round trip through int32 has no derivative.
    let g = lazuli::grad(|x| x[0].astype(DType::I32)?.astype(DType::F64)?.mul(&x[0])?.sum(&[], false), &[0]);
    assert_eq!(g(&[arr(&[1.5, 2.5], &[2])]).unwrap()[0].to_vec::<f64>().unwrap(), vec![1.0, 2.0]);
    // Between floats, the cotangent converts back: d/dx sum(3 * f32(x)) = 3 in f64.
    let g = lazuli::grad(|x| x[0].astype(DType::F32)?.mul(3.0)?.sum(&[], false), &[0]);
    let gx = &g(&[arr(&[1.5, 2.5], &[2])]).unwrap()[0];
    assert_eq!(gx.dtype(), DType::F64);
    assert_eq!(gx.to_vec::<f64>().unwrap(), vec![3.0, 3.0]);
    // pow at 0^0 has slope 0 in both arguments, not NaN.
    let g = lazuli::grad(|x| x[0].pow(&x[1])?.sum(&[], false), &[0, 1]);
    let gs = g(&[arr(&[0.0], &[1]), arr(&[0.0], &[1])]).unwrap();
    assert_eq!(gs[0].to_vec::<f64>().unwrap(), vec![0.0]);
    assert_eq!(gs[1].to_vec::<f64>().unwrap(), vec![0.0]);
}

#[test]
fn transforms_are_lazy_and_compose() {
    let x = arr(&[0.5, 1.5], &[2]);
    x.eval().unwrap();
    let g = lazuli::grad(|x| x[0].exp()?.sum(&[], false), &[0]);
    let gx = g(std::slice::from_ref(&x)).unwrap().remove(0);
    assert!(!gx.is_evaluated(), "building a gradient computes nothing");
    assert_eq!(gx.to_vec::<f64>().unwrap(), vec![0.5f64.exp(), 1.5f64.exp()]);
    // jvp of vjp: the vjp is linear in the cotangent, so its jvp along w is vjp(w).
    let f = |x: &[Array]| Ok(vec![x[0].sin()?.mul(&x[0])?]);
    let ct = arr(&[1.0, -2.0], &[2]);
    let w = arr(&[0.5, 3.0], &[2]);
    let x2 = x.clone();
    let vjp_ct = move |c: &[Array]| Ok(lazuli::vjp(f, std::slice::from_ref(&x2), c)?.1);
    let (_, lin) = lazuli::jvp(&vjp_ct, &[ct], std::slice::from_ref(&w)).unwrap();
    let direct = lazuli::vjp(f, std::slice::from_ref(&x), &[w]).unwrap().1;
    assert_eq!(lin[0].to_vec::<f64>().unwrap(), direct[0].to_vec::<f64>().unwrap());
    // value_and_grad gives the value from the same trace.
    let vg = lazuli::value_and_grad(|x| x[0].square()?.sum(&[], false), &[0]);
    let (v, gs) = vg(std::slice::from_ref(&x)).unwrap();
    assert_eq!(v.item::<f64>().unwrap(), 0.25 + 2.25);
    assert_eq!(gs[0].to_vec::<f64>().unwrap(), vec![1.0, 3.0]);
    // An input the function ignores gets zeros; argnums picks and orders.
    let g = lazuli::grad(|x| x[1].mul(&x[0])?.sum(&[], false), &[1, 0, 2]);
    let gs = g(&[arr(&[2.0], &[1]), arr(&[5.0], &[1]), arr(&[7.0], &[1])]).unwrap();
    let got: Vec<f64> = gs.iter().map(|a| a.item::<f64>().unwrap()).collect();
    assert_eq!(got, vec![2.0, 5.0, 0.0]);
}

#[test]
fn params_gradients_keep_names() {
    let mut p = lazuli::Params::new();
    p.insert("layer.w", arr(&[1.0, 2.0, 3.0, 4.0], &[2, 2]));
    p.insert("layer.b", arr(&[0.5, -0.5], &[2]));
    let x = arr(&[1.0, -1.0], &[1, 2]);
    let loss = move |p: &lazuli::Params| x.matmul(&p["layer.w"])?.add(&p["layer.b"])?.square()?.sum(&[], false);
    let (v, g) = lazuli::value_and_grad_params(loss)(&p).unwrap();
    // y = x W + b = [-2 + 0.5, -2 - 0.5]; loss = 1.5^2 + 2.5^2; dL/dy = 2y.
    assert_eq!(v.item::<f64>().unwrap(), 2.25 + 6.25);
    assert_eq!(g["layer.b"].to_vec::<f64>().unwrap(), vec![-3.0, -5.0]);
    assert_eq!(g["layer.w"].to_vec::<f64>().unwrap(), vec![-3.0, -5.0, 3.0, 5.0]);
    let only = lazuli::grad_params(|p: &lazuli::Params| p["layer.b"].sum(&[], false))(&p).unwrap();
    assert_eq!(only["layer.w"].to_vec::<f64>().unwrap(), vec![0.0; 4]);
}

#[test]
fn stop_gradient_custom_vjp_and_checkpoint() {
    let x = arr(&[0.3, -0.7, 1.1], &[3]);
    // stop_gradient: d/dx (x^2 * sg(x)) = 2x * x.
    let g = lazuli::grad(|x| x[0].square()?.mul(&lazuli::stop_gradient(&x[0])?)?.sum(&[], false), &[0]);
    let got = g(std::slice::from_ref(&x)).unwrap()[0].to_vec::<f64>().unwrap();
    for (g, x) in got.iter().zip([0.3f64, -0.7, 1.1]) {
        close("stop_gradient", *g, 2.0 * x * x, 1e-15);
    }
    // custom_vjp: the user's rule replaces the derivative; its forward value is f's;
    // jvp differentiates f itself.
    let doubled =
        std::sync::Arc::new(lazuli::custom_vjp(|x| Ok(vec![x[0].sin()?]), |_x, _y, ct| Ok(vec![ct[0].mul(2.0)?])));
    let d = doubled.clone();
    let g = lazuli::grad(move |x| d(x)?.remove(0).sum(&[], false), &[0]);
    assert_eq!(g(std::slice::from_ref(&x)).unwrap()[0].to_vec::<f64>().unwrap(), vec![2.0; 3]);
    let d = doubled.clone();
    let (y, t) = lazuli::jvp(move |x| d(x), std::slice::from_ref(&x), &[arr(&[1.0; 3], &[3])]).unwrap();
    let t = t[0].to_vec::<f64>().unwrap();
    let y = y[0].to_vec::<f64>().unwrap();
    for (i, x) in [0.3f64, -0.7, 1.1].iter().enumerate() {
        close("custom forward", y[i], x.sin(), 1e-15);
        close("custom jvp", t[i], x.cos(), 1e-15);
    }
    // A rule giving the wrong shape is an error naming the rule.
    let bad =
        lazuli::custom_vjp(|x| Ok(vec![x[0].sin()?]), |_x, _y, _ct| Ok(vec![Array::from_slice(&[1.0f64], &[1])?]));
    let g = lazuli::grad(move |x| bad(x)?.remove(0).sum(&[], false), &[0]);
    let err = g(std::slice::from_ref(&x)).unwrap_err();
    assert!(err.to_string().contains("custom_vjp"), "{err}");

    // checkpoint gives the same gradients as the plain function, also second order,
    // and with an integer input (held constant).
    let block = |x: &[Array]| -> Result<Vec<Array>> {
        let h = x[0].matmul(&x[1])?.tanh()?;
        Ok(vec![h.mul(&x[2].astype(DType::F64)?)?.sum(&[], false)?])
    };
    let w = arr(&vals(6, 9, -1.0, 1.0), &[3, 2]);
    let xin = arr(&vals(6, 8, -1.0, 1.0), &[2, 3]);
    let k = Array::from_slice(&[2i32, -1], &[2]).unwrap();
    let ck = std::sync::Arc::new(lazuli::checkpoint(block));
    let args = [xin.clone(), w.clone(), k.clone()];
    let plain = lazuli::grad(move |x| Ok(block(x)?.remove(0)), &[0, 1])(&args).unwrap();
    let c2 = ck.clone();
    let checked = lazuli::grad(move |x| Ok(c2(x)?.remove(0)), &[0, 1])(&args).unwrap();
    for (p, c) in plain.iter().zip(&checked) {
        assert_eq!(p.to_vec::<f64>().unwrap(), c.to_vec::<f64>().unwrap());
    }
}

#[test]
fn errors_name_the_problem() {
    let x = arr(&[1.0, 2.0], &[2]);
    let i = Array::from_slice(&[1i32, 2], &[2]).unwrap();
    let sum = |x: &[Array]| x[0].sum(&[], false);
    // An integer input.
    match lazuli::grad(|x| x[0].astype(DType::F32)?.sum(&[], false), &[0])(std::slice::from_ref(&i)) {
        Err(Error::DType { msg, .. }) => assert!(msg.contains("input 0"), "{msg}"),
        other => panic!("{other:?}"),
    }
    // A non-scalar output.
    match lazuli::grad(|x| x[0].exp(), &[0])(std::slice::from_ref(&x)) {
        Err(Error::Shape { msg, .. }) => assert!(msg.contains("scalar") && msg.contains("[2]"), "{msg}"),
        other => panic!("{other:?}"),
    }
    // argnums out of range, repeated, empty.
    for (nums, want) in [(&[1][..], "got 1 inputs"), (&[0, 0][..], "twice"), (&[][..], "empty")] {
        match lazuli::grad(sum, nums)(std::slice::from_ref(&x)) {
            Err(Error::Invalid { msg, .. }) => assert!(msg.contains(want), "{msg}"),
            other => panic!("{other:?}"),
        }
    }
    // Cotangents of the wrong shape, dtype or number.
    let f = |x: &[Array]| Ok(vec![x[0].exp()?]);
    let bad_shape = arr(&[1.0, 2.0, 3.0], &[3]);
    assert!(matches!(lazuli::vjp(f, std::slice::from_ref(&x), &[bad_shape]), Err(Error::Shape { .. })));
    let bad_dtype = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    assert!(matches!(
        lazuli::vjp(f, std::slice::from_ref(&x), std::slice::from_ref(&bad_dtype)),
        Err(Error::DType { .. })
    ));
    assert!(matches!(lazuli::vjp(f, std::slice::from_ref(&x), &[]), Err(Error::Invalid { .. })));
    // Tangents likewise.
    assert!(matches!(lazuli::jvp(f, std::slice::from_ref(&x), &[bad_dtype]), Err(Error::DType { .. })));
    // A function that fails passes its error through.
    let failing = |x: &[Array]| x[0].reshape(&[3]);
    assert!(matches!(lazuli::grad(failing, &[0])(std::slice::from_ref(&x)), Err(Error::Shape { .. })));
}

/// The GPU's rules against the CPU's, in f32, on functions covering every primitive.
#[test]
fn gpu_gradients_match_cpu() {
    if !gpu_available() {
        return;
    }
    let cases: Vec<Case> =
        [unary_cases(), binary_cases(), view_cases(), reduce_cases(), join_index_cases(), matmul_cases()]
            .into_iter()
            .flatten()
            .filter(|c| !c.name.contains("astype f64"))
            .collect();
    let grads_on = |d: Device, c: &Case| -> Vec<Vec<f32>> {
        on(d, || {
            let xs: Vec<Array> = c
                .inputs
                .iter()
                .enumerate()
                .map(|(i, (s, lo, hi))| {
                    let v: Vec<f32> = common::values(s.iter().product(), 77 + i as u64, *lo as f32, *hi as f32);
                    Array::from_slice(&v, s)
                })
                .collect::<Result<_>>()?;
            let f = &c.f;
            let y = f(&xs)?;
            let u = Array::from_slice(&common::values(y.size(), 5, -1.0, 1.0), y.shape())?;
            let (_, g) = lazuli::vjp(|x| Ok(vec![f(x)?.astype(DType::F32)?]), &xs, &[u])?;
            let ts: Vec<Array> = xs.iter().map(|x| x.ones_like()).collect::<Result<_>>()?;
            let (_, t) = lazuli::jvp(|x| Ok(vec![f(x)?.astype(DType::F32)?]), &xs, &ts)?;
            g.iter().chain(&t).map(|a| a.to_vec::<f32>()).collect()
        })
        .unwrap_or_else(|e| panic!("{} on {d:?}: {e}", c.name))
    };
    let [cpu, gpu] = devices()[..] else { panic!("two devices") };
    for c in &cases {
        let (want, got) = (grads_on(cpu, c), grads_on(gpu, c));
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            common::assert_close(&format!("{} derivative {k}", c.name), g, w, 2e-4, 2e-5);
        }
    }
}
