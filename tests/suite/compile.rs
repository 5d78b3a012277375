//! `lazuli::compile`: replays equal direct calls on every device, one trace per
//! signature, common subexpressions and constants folded, a bounded cache, shapeless mode,
//! and transforms through a compiled function.

use lazuli::Array;

use crate::common::{assert_close, devices, on};

fn data(n: usize, seed: u32) -> Vec<f32> {
    (0..n).map(|i| (((i as u32).wrapping_mul(2654435761) ^ seed) % 1000) as f32 / 250.0 - 2.0).collect()
}

fn body(x: &[Array]) -> lazuli::Result<Vec<Array>> {
    let (a, b) = (&x[0], &x[1]);
    let y = ((&(a * b)? + 0.25)?.exp()? * 0.5)?.tanh()?;
    let s = (&y - &y.mean(&[-1], true)?)?.square()?.sum(&[-1], true)?;
    Ok(vec![y.clone(), (&y / &(&s + 1.0)?)?])
}

#[test]
fn replays_equal_direct_calls_on_every_device() {
    for d in devices() {
        let f = lazuli::compile(body);
        for (round, shape) in [[3usize, 5], [3, 5], [4, 7], [3, 5]].iter().enumerate() {
            let n = shape[0] * shape[1];
            let r = on(d, || {
                let a = Array::from_slice(&data(n, round as u32), shape)?;
                let b = Array::from_slice(&data(n, 7 + round as u32), shape)?;
                let want = body(&[a.clone(), b.clone()])?;
                let got = f.call(&[a, b])?;
                for (w, g) in want.iter().zip(&got) {
                    assert_eq!(w.shape(), g.shape());
                    assert_eq!(w.to_vec::<f32>()?, g.to_vec::<f32>()?, "{d:?} round {round}");
                }
                Ok(())
            });
            r.unwrap();
        }
        // [3, 5] and [4, 7]: two signatures, each traced once.
        assert_eq!(f.traces(), 2, "{d:?}");
        assert_eq!(f.cached(), 2);
    }
}

#[test]
fn common_subexpressions_and_constants_fold() {
    let w = Array::from_slice(&[0.5f32, 1.0, 2.0], &[3]).unwrap();
    let f = lazuli::compile(|x: &[Array]| {
        // exp(x) twice is one primitive; exp(w) reads no input: folded to data.
        let e = (&x[0].exp()? + &x[0].exp()?)?;
        Ok(vec![(&e * &w.exp()?)?])
    });
    let x = Array::from_slice(&[0.0f32, 1.0, -1.0], &[3]).unwrap();
    assert_eq!(f.primitives(std::slice::from_ref(&x)).unwrap(), 3, "exp, add, mul");
    let got = f.call(&[x]).unwrap()[0].to_vec::<f32>().unwrap();
    let want: Vec<f32> =
        [0.0f32, 1.0, -1.0].iter().zip([0.5f32, 1.0, 2.0]).map(|(x, w)| 2.0 * x.exp() * w.exp()).collect();
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-6 * w.abs(), "{got:?} vs {want:?}");
    }
}

#[test]
fn the_cache_is_bounded() {
    let f = lazuli::compile(|x: &[Array]| Ok(vec![x[0].sin()?])).cache_limit(2);
    let arr = |n: usize| Array::from_slice(&vec![1.0f32; n], &[n]).unwrap();
    for n in [1, 2, 3] {
        f.call(&[arr(n)]).unwrap();
    }
    assert_eq!((f.cached(), f.traces()), (2, 3));
    // n = 1 was the least recently used: gone, traced again.
    f.call(&[arr(1)]).unwrap();
    assert_eq!((f.cached(), f.traces()), (2, 4));
    f.call(&[arr(3)]).unwrap();
    assert_eq!(f.traces(), 4, "3 was kept");
}

#[test]
fn shapeless_mode_serves_every_size_of_a_rank() {
    let f = lazuli::compile(|x: &[Array]| Ok(vec![(&x[0].tanh()? * 2.0)?.relu()?])).shapeless(true);
    for n in [4usize, 9, 100] {
        let v = data(n, 3);
        let y = f.call(&[Array::from_slice(&v, &[n]).unwrap()]).unwrap();
        let want: Vec<f32> = v.iter().map(|x| (x.tanh() * 2.0).max(0.0)).collect();
        // The CPU's tanh is within 1 ulp of the exact value, not libm's bit for bit.
        assert_close("shapeless", &y[0].to_vec::<f32>().unwrap(), &want, 4e-7, 0.0);
    }
    assert_eq!(f.traces(), 1);
    // A primitive with a fixed shape refuses other sizes: that signature is traced again.
    let g = lazuli::compile(|x: &[Array]| Ok(vec![x[0].reshape(&[2, x[0].shape()[0] as isize / 2])?])).shapeless(true);
    assert_eq!(g.call(&[Array::from_slice(&[1.0f32; 4], &[4]).unwrap()]).unwrap()[0].shape(), &[2, 2]);
    assert_eq!(g.call(&[Array::from_slice(&[1.0f32; 6], &[6]).unwrap()]).unwrap()[0].shape(), &[2, 3]);
    assert_eq!(g.traces(), 2);
}

#[test]
fn gradients_see_through_a_compiled_function() {
    let f = lazuli::compile(|x: &[Array]| Ok(vec![(&x[0] * &x[0])?.sin()?.sum(&[], false)?]));
    let g = lazuli::grad(|x: &[Array]| Ok(f.call(x)?.remove(0)), &[0]);
    let v = [0.5f32, -1.0, 2.0];
    let x = Array::from_slice(&v, &[3]).unwrap();
    for _ in 0..2 {
        let d = g(std::slice::from_ref(&x)).unwrap()[0].to_vec::<f32>().unwrap();
        for (dv, xv) in d.iter().zip(&v) {
            let want = 2.0 * xv * (xv * xv).cos();
            assert!((dv - want).abs() <= 1e-6, "{d:?}");
        }
    }
}

#[test]
fn errors_of_the_function_come_back() {
    let f = lazuli::compile(|x: &[Array]| Ok(vec![x[0].matmul(&x[0])?]));
    let e = f.call(&[Array::from_slice(&[1.0f32; 6], &[2, 3]).unwrap()]);
    assert!(matches!(e, Err(lazuli::Error::Shape { .. })), "{e:?}");
    assert_eq!(f.cached(), 0, "a failed trace is not kept");
}

/// gelu in its tanh form, the pattern the fused-plan tests compile.
fn gelu(x: &[Array]) -> lazuli::Result<Vec<Array>> {
    let x = &x[0];
    let inner = (&(x + &(&(x * x)? * x)?.mul(0.044715)?)? * 0.7978845608)?;
    Ok(vec![(&(x * 0.5)? * &(&inner.tanh()? + 1.0)?)?])
}

/// With fusion on, a call builds one `Fused` node per region of the trace instead of a
/// node per primitive, and the region runs as one kernel: the results equal the direct
/// call's (whose eval fuses the same region) on every device, for an elementwise chain
/// and for softmax (a row region on the GPU).
#[test]
fn a_call_builds_one_node_per_fused_region() {
    let softmax = |x: &[Array]| Ok(vec![x[0].softmax(&[-1])?]);
    for d in devices() {
        let g = lazuli::compile(gelu);
        let s = lazuli::compile(softmax);
        on(d, || {
            let x = Array::from_slice(&data(4 * 300, 5), &[4, 300])?;
            let input = std::slice::from_ref(&x);
            let prims = g.primitives(input)?;
            assert!(prims >= 9, "{d:?}: {prims}");
            let nodes = g.nodes(input)?;
            if lazuli::fusion::enabled() {
                assert_eq!(nodes, 1, "{d:?}: one region");
            } else {
                assert_eq!(nodes, prims, "{d:?}: fusion off, primitive by primitive");
            }
            let before = lazuli::fusion::regions_run_here();
            let out = g.call(input)?.remove(0);
            if lazuli::fusion::enabled() {
                // The call built the region's node: the pass finds nothing left to fuse.
                assert!(lazuli::fusion::programs(&[&out]).is_empty(), "{d:?}");
                assert!(s.nodes(input)? < s.primitives(input)?, "{d:?}: softmax keeps a region");
            }
            let got = out.to_vec::<f32>()?;
            let regions = lazuli::fusion::regions_run_here() - before;
            assert_eq!(regions, u64::from(lazuli::fusion::enabled()), "{d:?}");
            let want = gelu(input)?.remove(0).to_vec::<f32>()?;
            assert_close("compiled gelu", &got, &want, 1e-6, 1e-7);
            // Against an f64 reference too.
            let f64_ref: Vec<f32> = data(4 * 300, 5)
                .iter()
                .map(|&v| {
                    let v = v as f64;
                    (0.5 * v * (1.0 + (0.7978845608 * (v + 0.044715 * v * v * v)).tanh())) as f32
                })
                .collect();
            assert_close("compiled gelu vs f64", &got, &f64_ref, 1e-5, 1e-6);
            let got = s.call(input)?.remove(0).to_vec::<f32>()?;
            let want = x.softmax(&[-1])?.to_vec::<f32>()?;
            assert_close("compiled softmax", &got, &want, 1e-6, 1e-8);
            Ok(())
        })
        .unwrap();
        assert_eq!((g.traces(), s.traces()), (1, 1), "{d:?}");
    }
}

/// A region member that is also an output (`sin(a)`, read by `3 sin(a)`) stays a step:
/// the region would have to write it out beside its root. A region that follows an
/// opaque primitive reads its result, and a transform through the compiled function sees
/// primitives, not regions.
#[test]
fn planned_calls_keep_outputs_and_transforms_right() {
    let f = lazuli::compile(|x: &[Array]| {
        let t = (&(&x[0] * 2.0)? + 1.0)?;
        let m = t.matmul(&x[1])?;
        let u = x[0].sin()?;
        Ok(vec![t.clone(), (&t.exp()? * 0.5)?, (&m.tanh()? - 1.0)?, u.clone(), (&u * 3.0)?])
    });
    let (av, bv) = (data(6, 1), data(6, 2));
    for d in devices() {
        on(d, || {
            let a = Array::from_slice(&av, &[2, 3])?;
            let b = Array::from_slice(&bv, &[3, 2])?;
            let (prims, nodes) = (f.primitives(&[a.clone(), b.clone()])?, f.nodes(&[a.clone(), b.clone()])?);
            if lazuli::fusion::enabled() && d == lazuli::Device::cpu() {
                // Regions t, exp(t) / 2 and tanh(m) - 1, the matmul, and sin(a), its
                // product by 3 and the constant 3 as steps.
                assert_eq!((prims, nodes), (13, 7), "{d:?}");
            }
            let got = f.call(&[a.clone(), b.clone()])?;
            let t: Vec<f64> = av.iter().map(|&v| 2.0 * v as f64 + 1.0).collect();
            let want_t: Vec<f32> = t.iter().map(|&v| v as f32).collect();
            assert_close("t", &got[0].to_vec::<f32>()?, &want_t, 1e-7, 0.0);
            let want_e: Vec<f32> = t.iter().map(|&v| (v.exp() * 0.5) as f32).collect();
            assert_close("exp(t) / 2", &got[1].to_vec::<f32>()?, &want_e, 1e-6, 0.0);
            let mut want_m = vec![0f32; 4];
            for i in 0..2 {
                for j in 0..2 {
                    let dot: f64 = (0..3).map(|k| t[i * 3 + k] * bv[k * 2 + j] as f64).sum();
                    want_m[i * 2 + j] = (dot.tanh() - 1.0) as f32;
                }
            }
            assert_close("tanh(t @ b) - 1", &got[2].to_vec::<f32>()?, &want_m, 1e-5, 1e-6);
            let want_u: Vec<f32> = av.iter().map(|&v| (v as f64).sin() as f32).collect();
            assert_close("sin(a)", &got[3].to_vec::<f32>()?, &want_u, 1e-6, 1e-7);
            let want_3u: Vec<f32> = want_u.iter().map(|&v| 3.0 * v).collect();
            assert_close("3 sin(a)", &got[4].to_vec::<f32>()?, &want_3u, 1e-6, 1e-7);
            // d/da sum(exp(2a + 1) / 2) = exp(2a + 1).
            let g = lazuli::grad(|x: &[Array]| f.call(x)?.remove(1).sum(&[], false), &[0]);
            let da = g(&[a, b])?.remove(0).to_vec::<f32>()?;
            let want_da: Vec<f32> = t.iter().map(|&v| v.exp() as f32).collect();
            assert_close("gradient", &da, &want_da, 1e-6, 0.0);
            Ok(())
        })
        .unwrap();
    }
}

/// A call under another stream scope than the trace's builds its nodes where a plain call
/// would: on the scope's device, with the same values.
#[test]
fn a_call_follows_the_callers_stream_scope() {
    let f = lazuli::compile(gelu);
    let x = Array::from_slice(&data(8, 3), &[8]).unwrap();
    let plain = f.call(std::slice::from_ref(&x)).unwrap().remove(0);
    assert_eq!(plain.device(), x.device());
    let want = plain.to_vec::<f32>().unwrap();
    for d in devices() {
        let s = lazuli::default_stream(d).unwrap();
        let y = lazuli::with_stream(&s, || f.call(std::slice::from_ref(&x))).unwrap().remove(0);
        assert_eq!(y.device(), d);
        assert_close("gelu in a scope", &y.to_vec::<f32>().unwrap(), &want, 1e-6, 1e-7);
    }
}

/// A shapeless trace keeps a fused plan for each size it is called with: one trace, one
/// region node per call at every size (more sizes than the plans it keeps), the values
/// of a direct call.
#[test]
fn shapeless_calls_keep_a_plan_per_size() {
    let f = lazuli::compile(gelu).shapeless(true);
    for d in devices() {
        for n in [8usize, 12, 1000, 8, 1, 2, 3, 4, 5, 6, 7, 9, 8] {
            on(d, || {
                let x = Array::from_slice(&data(n, n as u32), &[n])?;
                let input = std::slice::from_ref(&x);
                let want = gelu(input)?.remove(0).to_vec::<f32>()?;
                let got = f.call(input)?.remove(0).to_vec::<f32>()?;
                assert_close("shapeless gelu", &got, &want, 1e-6, 1e-7);
                if lazuli::fusion::enabled() {
                    assert_eq!(f.nodes(input)?, 1, "{d:?}, n = {n}");
                }
                Ok(())
            })
            .unwrap();
        }
    }
    assert_eq!(f.traces(), devices().len(), "one trace a device");
}
