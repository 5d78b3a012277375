//! Fusion: regions planned as documented, fused and unfused runs agree on every device,
//! generated GPU kernels validate with naga for every target.

use lazuli::fusion::{self, Step};
use lazuli::{Array, DType};

use crate::common::{devices, on};

/// `tanh(exp(a*b+c)*0.5)`: one region of six primitives (the 0.5 folded in, `c` read
/// broadcast).
#[test]
fn chain_is_one_region() {
    let a = Array::from_slice(&[0.5f32, -1.0, 2.0, 0.25], &[4]).unwrap();
    let b = Array::from_slice(&[1.5f32, 0.5, -0.5, 4.0], &[4]).unwrap();
    let c = Array::from_slice(&[0.1f32], &[1]).unwrap();
    let y = ((&(&a * &b).unwrap() + &c).unwrap().exp().unwrap() * 0.5).unwrap().tanh().unwrap();
    let progs = fusion::programs(&[&y]);
    assert_eq!(progs.len(), 1, "{progs:?}");
    let p = &progs[0];
    assert_eq!(p.primitives(), 6, "{p}");
    assert_eq!(p.inputs.len(), 3);
    assert!(p.steps.iter().any(|(s, _)| matches!(s, Step::Const(c) if *c == 0.5)), "{p}");
    let want: Vec<f32> = [0.5f32, -1.0, 2.0, 0.25]
        .iter()
        .zip([1.5f32, 0.5, -0.5, 4.0])
        .map(|(x, y)| ((x * y + 0.1).exp() * 0.5).tanh())
        .collect();
    let got = y.to_vec::<f32>().unwrap();
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-6, "{got:?} vs {want:?}");
    }
}

/// The temporaries of the statement that evaluates are still held, so they are written
/// out; bound with `let` first, only the result is (README, Fusion).
#[test]
fn statement_temporaries_are_written_out_let_bound_results_alone() {
    let a = Array::from_slice(&[0.5f32, 1.0, 1.5, 2.0], &[4]).unwrap();
    let held = fusion::programs(&[&(&a * 2.0).unwrap().exp().unwrap()]);
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0].extra_outputs.len(), 1, "{}", held[0]);
    let y = (&a * 2.0).unwrap().exp().unwrap();
    let alone = fusion::programs(&[&y]);
    assert_eq!(alone.len(), 1, "{alone:?}");
    assert!(alone[0].extra_outputs.is_empty(), "{}", alone[0]);
}

/// An eval of one op on computed arrays runs that op alone (without the planner), except
/// where the backend makes a region of a lone op reading an input broadcast (the GPU's
/// generated kernels index broadcasts better than its own): then it is still one region.
#[test]
fn one_op_on_computed_arrays_runs_alone_or_as_its_lone_region() {
    for d in devices() {
        on(d, || {
            let x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
            let s = Array::from_slice(&[2.0f32, 4.0], &[2, 1])?;
            lazuli::eval(&[&x, &s])?;
            let lone_broadcasts = d.kind == lazuli::DeviceKind::Gpu;
            for (name, y, regions, want) in [
                ("x * x", (&x * &x)?, 0, vec![1.0f32, 4.0, 9.0, 16.0, 25.0, 36.0]),
                ("x / s", (&x / &s)?, u64::from(lone_broadcasts), vec![0.5, 1.0, 1.5, 1.0, 1.25, 1.5]),
            ] {
                let (prims, regs) = (lazuli::primitives_run_here(), fusion::regions_run_here());
                fusion::with_enabled(true, || y.eval())?;
                assert_eq!(lazuli::primitives_run_here() - prims, 1, "{d} {name}");
                assert_eq!(fusion::regions_run_here() - regs, regions, "{d} {name}");
                assert_eq!(y.to_vec::<f32>()?, want, "{d} {name}");
            }
            lazuli::Result::Ok(())
        })
        .unwrap();
    }
}

/// Wide fused kernels give each thread several vectors of four (the last thread fewer):
/// every element of sizes around those boundaries is written, with an extra output too.
#[test]
fn wide_kernels_cover_every_element() {
    for d in devices() {
        on(d, || {
            for n in [1usize, 4, 7, 8, 12, 16, 20, 1020, 1024, 1028, 4100, 65548] {
                let x: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.01 - 0.4).collect();
                let a = Array::from_slice(&x, &[n])?;
                let e = (&a * 2.0)?.exp()?;
                let y = (&e + &a)?.tanh()?;
                fusion::with_enabled(true, || lazuli::eval(&[&y, &e]))?;
                let (yv, ev) = (y.to_vec::<f32>()?, e.to_vec::<f32>()?);
                for (i, &v) in x.iter().enumerate() {
                    let we = (2.0 * v as f64).exp();
                    let wy = (we + v as f64).tanh();
                    assert!((ev[i] as f64 - we).abs() <= 1e-6 * we, "{d} n={n} e[{i}]: {} vs {we}", ev[i]);
                    assert!((yv[i] as f64 - wy).abs() <= 1e-6, "{d} n={n} y[{i}]: {} vs {wy}", yv[i]);
                }
            }
            lazuli::Result::Ok(())
        })
        .unwrap();
    }
}

/// A node a user still holds joins the region and is written out as an extra output:
/// one kernel, and both values right.
#[test]
fn held_intermediates_are_written_out() {
    for d in devices() {
        on(d, || {
            let a = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3])?;
            let e = a.exp()?;
            let y = (&e + 1.0)?.sqrt()?;
            let progs = fusion::programs(&[&y]);
            assert_eq!(progs.len(), 1, "{progs:?}");
            let p = &progs[0];
            assert_eq!((p.inputs.len(), p.primitives(), p.extra_outputs.len()), (1, 4, 1), "{p}");
            assert!(matches!(p.steps[p.extra_outputs[0]].0, Step::Unary(lazuli::primitive::UnaryOp::Exp, _)), "{p}");
            let before = fusion::regions_run_here();
            fusion::with_enabled(true, || lazuli::eval(&[&y]))?;
            assert_eq!(fusion::regions_run_here() - before, 1, "{d}");
            let ev = e.to_vec::<f32>()?;
            let want: Vec<f32> = [1.0f32, 2.0, 3.0].iter().map(|x| x.exp()).collect();
            for (g, w) in ev.iter().zip(&want) {
                assert!((g - w).abs() <= 2e-7 * w, "{ev:?} vs {want:?}");
            }
            let yv = y.to_vec::<f32>()?;
            for (g, x) in yv.iter().zip(&want) {
                assert!((g - (x + 1.0).sqrt()).abs() <= 1e-6 * g.abs());
            }
            lazuli::Result::Ok(())
        })
        .unwrap();
    }
}

/// A scalar constant folded into a region is not run as a node of its own when only
/// regions read it (its value is in the kernel; a fill per constant per eval before); one
/// an eval asks for, or a user holds, still gets its value.
#[test]
fn folded_constants_run_only_when_needed() {
    let xv = [0.5f32, -1.0, 2.0];
    for d in devices() {
        on(d, || {
            let x = Array::from_slice(&xv, &[3])?.add(0.0)?;
            x.eval()?;
            fusion::with_enabled(true, || {
                let y = (&x * 0.5)?.exp()?;
                let before = lazuli::primitives_run_here();
                y.eval()?;
                assert_eq!(lazuli::primitives_run_here() - before, 2, "{d}: mul and exp, no fill");
                let yv = y.to_vec::<f32>()?;
                for (g, v) in yv.iter().zip(xv) {
                    let w = (f64::from(v) * 0.5).exp();
                    assert!((f64::from(*g) - w).abs() <= 1e-6 * w, "{d}: {yv:?}");
                }
                // Asked for beside the region's output.
                let c = lazuli::full(&[], 0.25, DType::F32)?;
                let z = (&x + &c)?.exp()?;
                lazuli::eval(&[&z, &c])?;
                assert_eq!(c.item::<f32>()?, 0.25, "{d}");
                // Held by the caller, not asked for: run with the eval all the same.
                let k = lazuli::full(&[], 3.0, DType::F32)?;
                let w = (&x * &k)?.neg()?;
                w.eval()?;
                assert_eq!(w.to_vec::<f32>()?, xv.map(|v| -3.0 * v), "{d}");
                assert_eq!(k.item::<f32>()?, 3.0, "{d}");
                let zv = z.to_vec::<f32>()?;
                for (g, v) in zv.iter().zip(xv) {
                    let w = (f64::from(v) + 0.25).exp();
                    assert!((f64::from(*g) - w).abs() <= 1e-6 * w, "{d}: {zv:?}");
                }
                lazuli::Result::Ok(())
            })
        })
        .unwrap();
    }
}

/// The temporaries of one expression (`a.mul(&b)?.exp()?.eval()`) live until the statement
/// ends, so they are held while it evaluates: the chain still runs as one region, each
/// temporary written out, every value right (also one a later node reads).
#[test]
fn chained_temporaries_fuse() {
    for d in devices() {
        on(d, || {
            let x: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) / 300.0).collect();
            let a = Array::from_slice(&x, &[1000])?;
            let b = (&a * 0.5)?;
            b.eval()?;
            let before = fusion::regions_run_here();
            let t = (&a * &b)?;
            let later = t.sin()?;
            fusion::with_enabled(true, || t.add(&a)?.exp()?.mul(0.5)?.tanh()?.eval())?;
            assert_eq!(fusion::regions_run_here() - before, 1, "{d}: one region");
            let want: Vec<f32> = x.iter().map(|v| v * (v * 0.5)).collect();
            assert_eq!(t.to_vec::<f32>()?, want, "{d}: the held product is written out exactly");
            let s = later.to_vec::<f32>()?;
            for (g, w) in s.iter().zip(&want) {
                assert!((g - w.sin()).abs() <= 1e-6, "{d}: {g} vs {}", w.sin());
            }
            lazuli::Result::Ok(())
        })
        .unwrap();
    }
}

/// Held values of several dtypes, one of them over constants only, written out by a
/// region of many chunks and thread tasks with a ragged end: each equals its unfused
/// value, bit for bit on the CPU. The f32 outputs are large enough for the CPU's buffer
/// pool, which is first filled with other values: an element a region failed to write
/// would show them.
#[test]
fn held_values_of_every_kind_over_many_chunks() {
    let n = 300_007;
    let x: Vec<f32> = (0..n).map(|i| ((i * 7919) % 2003) as f32 / 500.0 - 2.0).collect();
    for d in devices() {
        let run = |fused: bool| -> lazuli::Result<Vec<Vec<f32>>> {
            on(d, || {
                fusion::with_enabled(fused, || {
                    let junk: Vec<Array> = (0..6)
                        .map(|k| lazuli::full(&[n], 1e6 + k as f64, DType::F32))
                        .collect::<lazuli::Result<_>>()?;
                    lazuli::eval(&junk.iter().collect::<Vec<_>>())?;
                    drop(junk);
                    let a = Array::from_slice(&x, &[n])?;
                    let b = (&a * 0.5)?.sin()?;
                    lazuli::eval(&[&a, &b])?;
                    let t = (&a * &b)?;
                    let m = t.gt(&b)?;
                    let h = t.astype(DType::F16)?;
                    let k = (&lazuli::full(&[n], 2.0, DType::F32)? * 3.0)?;
                    let y = (&lazuli::where_(&m, &t.exp()?, &k)? + &h.astype(DType::F32)?)?;
                    let before = fusion::regions_run_here();
                    y.eval()?;
                    if fused {
                        assert_eq!(fusion::regions_run_here() - before, 1, "{d}: one region");
                    }
                    [t, m.astype(DType::F32)?, h.astype(DType::F32)?, k, y].iter().map(|v| v.to_vec::<f32>()).collect()
                })
            })
        };
        let (plain, fused) = (run(false).unwrap(), run(true).unwrap());
        for (j, (p, f)) in plain.iter().zip(&fused).enumerate() {
            assert_eq!(p.len(), n);
            for (i, (p, f)) in p.iter().zip(f).enumerate() {
                // The GPU's compiler may contract or reorder once it sees the ops together.
                let close = (p - f).abs() <= 4.0 * f32::EPSILON * p.abs().max(1.0);
                assert!(
                    p.to_bits() == f.to_bits() || (d != lazuli::Device::cpu() && close),
                    "{d}: value {j}, element {i}: {p} vs {f}"
                );
            }
        }
    }
}

/// A value another node of the same eval reads outside the region (here a reduction that
/// feeds the region back) cannot be an extra output: the region starts after it, and the
/// result is right.
#[test]
fn values_consumed_outside_are_not_exposed() {
    for d in devices() {
        on(d, || {
            let x: Vec<f32> = (0..512).map(|i| (i % 17) as f32 / 7.0).collect();
            let a = Array::from_slice(&x, &[2, 256])?;
            let e = a.exp()?;
            let y = (&(&e * 2.0)? / &e.sum(&[1], true)?)?;
            drop(e);
            let progs = fusion::programs(&[&y]);
            assert!(progs.iter().all(|p| p.extra_outputs.is_empty()), "{progs:?}");
            let got = y.to_vec::<f32>()?;
            for r in 0..2 {
                let row = &x[r * 256..(r + 1) * 256];
                let s: f64 = row.iter().map(|v| (*v as f64).exp()).sum();
                for (c, v) in row.iter().enumerate() {
                    let w = 2.0 * (*v as f64).exp() / s;
                    assert!((got[r * 256 + c] as f64 - w).abs() <= 1e-5 * w, "{d}");
                }
            }
            lazuli::Result::Ok(())
        })
        .unwrap();
    }
}

/// A shared subexpression inside a region is computed once, and regions respect the
/// input limit by writing out.
#[test]
fn shared_values_and_many_inputs() {
    let xs: Vec<Array> = (0..20).map(|i| Array::from_slice(&[i as f32, 1.0], &[2]).unwrap()).collect();
    let mut acc = xs[0].clone();
    for x in &xs[1..] {
        acc = (&acc + x).unwrap();
    }
    let s = acc.sin().unwrap();
    let y = (&s * &s).unwrap();
    for p in fusion::programs(&[&y]) {
        assert!(p.inputs.len() <= 16, "{p}");
    }
    let v = y.to_vec::<f32>().unwrap();
    let total: f32 = (0..20).map(|i| i as f32).sum();
    assert!((v[0] - total.sin().powi(2)).abs() < 1e-6);
    assert!((v[1] - 20f32.sin().powi(2)).abs() < 1e-6);
}

/// A region reading seven inputs (eight bindings with its output, past the fixed-size
/// bind lists of the plain kernels) runs as one fused kernel on every device, not through
/// the unfused fallback, and gives the exact sum.
#[test]
fn wide_region_runs_fused() {
    for d in devices() {
        let (v, regions) = crate::common::on(d, || {
            let xs: Vec<Array> =
                (0..7).map(|i| Array::from_slice(&[i as f32, 2.0 * i as f32, -1.0], &[3])).collect::<Result<_, _>>()?;
            let mut acc = xs[0].clone();
            for x in &xs[1..] {
                acc = (&acc + x)?;
            }
            // `acc` dropped: a node the caller still holds is materialised, ending the region.
            let y = (&acc * 2.0)?;
            drop(acc);
            let before = fusion::regions_run_here();
            let v = y.to_vec::<f32>()?;
            Ok((v, fusion::regions_run_here() - before))
        })
        .unwrap();
        assert_eq!(v, vec![42.0, 84.0, -14.0], "{d:?}");
        let expected = if fusion::enabled() { 1 } else { 0 };
        assert_eq!(regions, expected, "{d:?}: one fused region with fusion on, none with it off");
    }
}

/// Regions whose inputs are all flat or scalar run four elements a thread on the GPU:
/// lengths that are not a multiple of four end inside the last vector, and a bool result
/// and extra outputs are stored four at a time too. Fused against the expected values
/// on every device.
#[test]
fn four_element_kernels_cover_every_length() {
    for d in devices() {
        for n in [1usize, 2, 3, 5, 7, 8, 1023, 4097] {
            let a: Vec<f32> = (0..n).map(|i| (i % 13) as f32 * 0.25 - 1.5).collect();
            let b: Vec<f32> = (0..n).map(|i| (i % 7) as f32 * 0.5 + 0.25).collect();
            let (t, held, mask) = on(d, || {
                let (x, y) = (Array::from_slice(&a, &[n])?, Array::from_slice(&b, &[n])?);
                let t = (&(&x * &y)? + 0.5)?;
                let u = (&t.exp()? * &y)?;
                // `t` and `u` are held: the region writes both out beside its root.
                let mask = u.gt(&x)?;
                let progs = fusion::programs(&[&mask]);
                if fusion::enabled() {
                    assert_eq!(progs.len(), 1, "{d:?}, n = {n}: {progs:?}");
                    assert_eq!(progs[0].extra_outputs.len(), 2, "{d:?}, n = {n}: {}", progs[0]);
                    #[cfg(feature = "gpu")]
                    crate::shaders_naga::validate_all_targets(
                        "four-element fused kernel",
                        &lazuli::backend::gpu::fused_source(&progs[0])?,
                    );
                }
                mask.eval()?;
                Ok((t.to_vec::<f32>()?, u.to_vec::<f32>()?, mask.to_vec::<bool>()?))
            })
            .unwrap();
            for i in 0..n {
                let want_t = a[i] * b[i] + 0.5;
                let want_u = want_t.exp() * b[i];
                assert!((t[i] - want_t).abs() <= 4.0 * f32::EPSILON * want_t.abs().max(1.0), "{d:?} n {n} t[{i}]");
                assert!((held[i] - want_u).abs() <= 8.0 * f32::EPSILON * want_u.abs().max(1.0), "{d:?} n {n} u[{i}]");
                assert_eq!(mask[i], held[i] > a[i], "{d:?} n {n} mask[{i}]");
            }
        }
    }
}

/// Fusion off and on give the same values on every device; bit for bit on the CPU.
#[test]
fn fused_equals_unfused_random_chains() {
    let mut seed = 0x9e3779b97f4a7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for d in devices() {
        let mut fused_cases = 0;
        for case in 0..24 {
            let dims = [[4usize, 5], [1, 5], [4, 1]][case % 3];
            let build = |data: &[Vec<f32>]| -> lazuli::Result<Array> {
                let s = lazuli::default_stream(d)?;
                lazuli::with_stream(&s, || {
                    let a = Array::from_slice(&data[0], &[4, 5])?;
                    let b = Array::from_slice(&data[1], &dims)?;
                    let mut v = vec![a, b];
                    for &r in &data[2] {
                        let r = r as usize;
                        let x = &v[r % v.len()];
                        let y = &v[(r / 7) % v.len()];
                        let n = match r % 11 {
                            0 => (x + y)?,
                            1 => (x * y)?,
                            2 => (x - 0.75)?,
                            3 => x.tanh()?,
                            4 => x.sin()?,
                            5 => x.maximum(y)?,
                            6 => lazuli::where_(&x.gt(y)?, x, y)?,
                            7 => (x / 3.0)?,
                            8 => x.abs()?.sqrt()?,
                            9 => x.exp()?.log1p()?,
                            _ => x.gt(y)?.astype(DType::F32)?,
                        };
                        v.push(n);
                    }
                    Ok(v.pop().unwrap())
                })
            };
            let data: Vec<Vec<f32>> = vec![
                (0..20).map(|_| (next() % 2000) as f32 / 500.0 - 2.0).collect(),
                (0..dims[0] * dims[1]).map(|_| (next() % 2000) as f32 / 500.0 - 2.0).collect(),
                (0..12).map(|_| (next() % 1000) as f32).collect(),
            ];
            let plain = fusion::with_enabled(false, || build(&data).unwrap().to_vec::<f32>().unwrap());
            let before = fusion::regions_run_here();
            let fused = fusion::with_enabled(true, || build(&data).unwrap().to_vec::<f32>().unwrap());
            // A chain whose last op reads only `a` or `b` has nothing to fuse.
            fused_cases += usize::from(fusion::regions_run_here() > before);
            for (i, (p, f)) in plain.iter().zip(&fused).enumerate() {
                let same = p.to_bits() == f.to_bits() || (p.is_nan() && f.is_nan());
                // The GPU's compiler may contract a*b+c once it sees both ops together.
                let close = (p - f).abs() <= 4.0 * f32::EPSILON * p.abs().max(1.0);
                assert!(same || (d != lazuli::Device::cpu() && close), "case {case} on {d:?}, element {i}: {p} vs {f}");
            }
        }
        assert!(fused_cases >= 16, "only {fused_cases} of 24 chains fused on {d:?}");
    }
}

/// Random chains of elementwise ops and row reductions read back by later ops (what the
/// GPU runs as row kernels) agree fused and unfused on every device, within the
/// reordering of the sums.
#[test]
fn fused_equals_unfused_random_row_chains() {
    let mut seed = 0x2545f4914f6cdd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    // Rows enough, and long enough, for the GPU to fuse reductions; rows of 258 are read
    // one element a step, rows of 256 four.
    let rows = 64usize;
    for d in devices() {
        let mut row_kernels = 0;
        for case in 0..12 {
            let cols = if case % 2 == 0 { 256usize } else { 258 };
            let build = |data: &[Vec<f32>]| -> lazuli::Result<Array> {
                crate::common::on(d, || {
                    let a = Array::from_slice(&data[0], &[rows, cols])?;
                    let b = Array::from_slice(&data[1], &[1, cols])?;
                    let mut v = vec![a.clone(), (&a * &b)?];
                    for &r in &data[2] {
                        let r = r as usize;
                        let x = &v[r % v.len()];
                        let y = &v[(r / 7) % v.len()];
                        let n = match r % 9 {
                            0 => (x + y)?,
                            1 => (x * y)?.tanh()?,
                            2 => x.sin()?,
                            3 => (x - &x.max(&[1], true)?)?,
                            4 => (x / &(&x.abs()?.sum(&[1], true)? + 1.0)?)?,
                            5 => (x * &x.mean(&[1], true)?)?,
                            6 => lazuli::where_(&x.gt(y)?, x, &y.min(&[1], true)?)?,
                            7 => x.softmax(&[1])?,
                            _ => (&(x - &x.mean(&[1], true)?)? / &(&x.var(&[1], true, 0)? + 1.0)?.sqrt()?)?,
                        };
                        v.push(n);
                    }
                    Ok(v.pop().unwrap())
                })
            };
            let data: Vec<Vec<f32>> = vec![
                (0..rows * cols).map(|_| (next() % 2000) as f32 / 500.0 - 2.0).collect(),
                (0..cols).map(|_| (next() % 2000) as f32 / 1000.0 - 1.0).collect(),
                (0..8).map(|_| (next() % 1000) as f32).collect(),
            ];
            let plain = fusion::with_enabled(false, || build(&data).unwrap().to_vec::<f32>().unwrap());
            let fused = fusion::with_enabled(true, || {
                let y = build(&data).unwrap();
                let row = |p: &fusion::Program| p.steps.iter().any(|(s, _)| matches!(s, Step::Reduce(..)));
                row_kernels += usize::from(fusion::programs(&[&y]).iter().any(row));
                y.to_vec::<f32>().unwrap()
            });
            for (i, (p, f)) in plain.iter().zip(&fused).enumerate() {
                let close = (p - f).abs() <= 1e-4 * p.abs().max(1.0) || (p.is_nan() && f.is_nan());
                assert!(close, "case {case} on {d:?}, element {i}: {p} vs {f}");
            }
        }
        let gpu = d != lazuli::Device::cpu();
        assert!(!gpu || row_kernels >= 6, "only {row_kernels} of 12 chains made a row kernel on {d:?}");
    }
}

/// Every generated GPU kernel of these programs validates and translates to SPIR-V, MSL
/// and HLSL (no device needed).
#[cfg(feature = "gpu")]
#[test]
fn generated_kernels_validate() {
    let a = Array::from_slice(&[0.5f32; 6], &[2, 3]).unwrap();
    let b = Array::from_slice(&[2.0f32; 3], &[3]).unwrap();
    let c = Array::from_slice(&[1.0f32, 2.0], &[2, 1]).unwrap();
    let x = (&(&a * &b).unwrap() + &c).unwrap();
    let cases = vec![
        x.exp().unwrap().tanh().unwrap(),
        lazuli::where_(&x.gt(&b).unwrap(), x.sin().unwrap(), (&c * 2.0).unwrap()).unwrap(),
        x.isnan().unwrap().astype(DType::F32).unwrap().sqrt().unwrap(),
        (&(&a * 0.5).unwrap() + 1.0).unwrap(),
    ];
    let mut n = 0;
    // A reduction program as the GPU planner makes it (the CPU does not fuse reductions,
    // so it is written out here): sum over rows of (x - mean)^2, mean read per row.
    let meta = |shape: &[usize]| lazuli::primitive::Meta::new(shape, DType::F32);
    let var = fusion::Program {
        shape: vec![96, 300],
        inputs: vec![meta(&[96, 300]), meta(&[96, 1]), meta(&[1, 300])],
        steps: vec![
            (Step::Input(0), DType::F32),
            (Step::Input(1), DType::F32),
            (Step::Binary(lazuli::primitive::BinaryOp::Sub, 0, 1), DType::F32),
            (Step::Unary(lazuli::primitive::UnaryOp::Square, 2), DType::F32),
            (Step::Input(2), DType::F32),
            (Step::Binary(lazuli::primitive::BinaryOp::Mul, 3, 4), DType::F32),
        ],
        result: 5,
        reduction: Some(lazuli::primitive::ReduceOp::Sum),
        reduce_axes: vec![1],
        output: meta(&[96, 1]),
        extra_outputs: vec![],
    };
    for axes in [vec![1], vec![0], vec![0, 1]] {
        let p = fusion::Program { reduce_axes: axes, ..var.clone() };
        crate::shaders_naga::validate_all_targets("fused reduction", &lazuli::backend::gpu::fused_source(&p).unwrap());
    }
    // `x` is held here, so regions reading it write it out too: kernels with extra
    // outputs are among those validated.
    let mut extra = 0;
    for y in &cases {
        for p in fusion::programs(&[y]) {
            let src = lazuli::backend::gpu::fused_source(&p).unwrap();
            crate::shaders_naga::validate_all_targets("fused", &src);
            n += 1;
            extra += p.extra_outputs.len();
        }
    }
    assert!(n >= cases.len());
    assert!(extra > 0, "some kernel has extra outputs");
}

/// Reductions with an elementwise prologue are one kernel on the GPU (rows long enough,
/// enough of them) and agree with the unfused passes within the reordering of the sum.
#[test]
fn reductions_with_prologues_agree() {
    if !crate::common::gpu_available() {
        return;
    }
    let gpu = lazuli::Device::gpu(0);
    type Case = (&'static str, Box<dyn Fn(&Array) -> lazuli::Result<Array>>);
    let cases: Vec<Case> = vec![
        ("sum(exp(x - 1)) over rows", Box::new(|x| (x - 1.0)?.exp()?.sum(&[-1], false))),
        ("var over rows", Box::new(|x| x.var(&[-1], true, 1))),
        ("logsumexp over rows", Box::new(|x| x.logsumexp(&[-1], false))),
        ("max(|x| * 2) over columns", Box::new(|x| (&x.abs()? * 2.0)?.max(&[0], false))),
        ("sum(x^2) over axes 0 and 2", Box::new(|x| x.reshape(&[4, 96, 75])?.square()?.sum(&[0, 2], false))),
        ("min(where(x > 0, x, -x)) over rows", Box::new(|x| lazuli::where_(&x.gt(0.0)?, x, x.neg()?)?.min(&[1], true))),
        // Row kernels: reductions read by later steps, the result written at every element.
        ("softmax over rows", Box::new(|x| x.softmax(&[-1]))),
        ("softmax over columns", Box::new(|x| x.softmax(&[0]))),
        ("layer_norm over rows", Box::new(layer_norm)),
        (
            "x / sum(x^2) over axes 0 and 2",
            Box::new(|x| {
                let x = x.reshape(&[4, 96, 75])?;
                &x / &x.square()?.sum(&[0, 2], true)?
            }),
        ),
        ("(x - max) * std over rows", Box::new(|x| &(x - &x.max(&[1], true)?)? * &x.std(&[1], true, 0)?)),
    ];
    let data: Vec<f32> = (0..96 * 300).map(|i| ((i * 7919 % 1000) as f32 / 250.0) - 2.0).collect();
    for (what, f) in &cases {
        let run = |fused: bool| -> lazuli::Result<(Vec<f32>, u64)> {
            let before = fusion::regions_run_here();
            let v = fusion::with_enabled(fused, || {
                crate::common::on(gpu, || {
                    let x = Array::from_slice(&data, &[96, 300])?;
                    let x = if what.contains("columns") { x.reshape(&[300, 96])? } else { x };
                    f(&x)?.to_vec::<f32>()
                })
            });
            Ok((v?, fusion::regions_run_here() - before))
        };
        let (plain, _) = run(false).unwrap();
        let (fused, regions) = run(true).unwrap();
        assert!(regions > 0, "{what}: nothing fused");
        let cpu = crate::common::on(lazuli::Device::cpu(), || {
            let x = Array::from_slice(&data, &[96, 300])?;
            let x = if what.contains("columns") { x.reshape(&[300, 96])? } else { x };
            f(&x)?.to_vec::<f32>()
        })
        .unwrap();
        for ((p, q), c) in plain.iter().zip(&fused).zip(&cpu) {
            let tol = 1e-5 * c.abs().max(1.0);
            assert!((p - q).abs() <= tol && (q - c).abs() <= tol, "{what}: unfused {p}, fused {q}, cpu {c}");
        }
    }
}

/// Layer normalisation over the last axis, as a model writes it.
fn layer_norm(x: &Array) -> lazuli::Result<Array> {
    let mean = x.mean(&[-1], true)?;
    let var = x.var(&[-1], true, 0)?;
    let g = Array::from_slice(&(0..x.shape()[1]).map(|i| 0.5 + i as f32 / 300.0).collect::<Vec<_>>(), &[x.shape()[1]])?;
    &(&(x - &mean)? / &(&var + 1e-5)?.sqrt()?)? * &g
}

/// On the GPU, layer_norm over rows is one row kernel (the mean's sum, computed once though
/// `var` takes the mean again, then the variance's sum, then the normalised row), and a
/// held intermediate of a row kernel is written out too.
#[cfg(feature = "gpu")]
#[test]
fn row_kernels_on_the_gpu() {
    if !crate::common::gpu_available() {
        return;
    }
    let data: Vec<f32> = (0..96 * 300).map(|i| ((i * 7919 % 1000) as f32 / 250.0) - 2.0).collect();
    on(lazuli::Device::gpu(0), || {
        let x = Array::from_slice(&data, &[96, 300])?;
        let y = layer_norm(&x)?;
        let progs = fusion::programs(&[&y]);
        assert_eq!(progs.len(), 1, "{progs:?}");
        assert_eq!(progs[0].steps.iter().filter(|(s, _)| matches!(s, Step::Reduce(..))).count(), 2, "{}", progs[0]);
        crate::shaders_naga::validate_all_targets("layer_norm", &lazuli::backend::gpu::fused_source(&progs[0])?);
        // `d` is held: the row kernel writes it out beside the result.
        let d = (&x - &x.max(&[1], true)?)?;
        let y = (&d.exp()? / &d.exp()?.sum(&[1], true)?)?;
        let progs = fusion::programs(&[&y]);
        assert_eq!(progs.len(), 1, "{progs:?}");
        assert_eq!(progs[0].extra_outputs.len(), 1, "{}", progs[0]);
        // The two `d.exp()` are one step.
        let exps =
            progs[0].steps.iter().filter(|(s, _)| matches!(s, Step::Unary(lazuli::primitive::UnaryOp::Exp, _))).count();
        assert_eq!(exps, 1, "{}", progs[0]);
        crate::shaders_naga::validate_all_targets(
            "row kernel, extra output",
            &lazuli::backend::gpu::fused_source(&progs[0])?,
        );
        let (got, dv) = (y.to_vec::<f32>()?, d.to_vec::<f32>()?);
        for r in 0..96 {
            let row = &data[r * 300..(r + 1) * 300];
            let m = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
            let s: f64 = row.iter().map(|&v| (v as f64 - m).exp()).sum();
            for c in 0..300 {
                let (want_d, want) = (row[c] as f64 - m, (row[c] as f64 - m).exp() / s);
                assert!((dv[r * 300 + c] as f64 - want_d).abs() <= 1e-6, "d[{r},{c}]");
                assert!((got[r * 300 + c] as f64 - want).abs() <= 1e-5 * want + 1e-9, "y[{r},{c}]");
            }
        }
        lazuli::Result::Ok(())
    })
    .unwrap();
}

/// On the GPU one elementwise op reading an input broadcast (`x / row_sums`) runs as a
/// generated kernel of its own (its strided reads unrolled for the rank), with the values
/// of the CPU; the CPU keeps its own kernel for it.
#[test]
fn lone_broadcasts_run_generated_on_the_gpu() {
    let x: Vec<f32> = (0..3 * 5 * 7).map(|i| i as f32 * 0.25 - 3.0).collect();
    let s: Vec<f32> = (0..3 * 7).map(|i| 1.0 + i as f32).collect();
    let want: Vec<f32> = (0..x.len()).map(|i| x[i] / s[(i / 35) * 7 + i % 7]).collect();
    for d in devices() {
        on(d, || {
            let a = Array::from_slice(&x, &[3, 5, 7])?;
            let b = Array::from_slice(&s, &[3, 1, 7])?;
            let y = (&a / &b)?;
            let progs = fusion::programs(&[&y]);
            let gpu = d != lazuli::Device::cpu();
            assert_eq!(progs.len(), usize::from(gpu), "{d}: {progs:?}");
            // Within an ulp: drivers may divide through a reciprocal.
            for (g, w) in y.to_vec::<f32>()?.iter().zip(&want) {
                assert!((g - w).abs() <= 1.2e-7 * w.abs(), "{d}: {g} vs {w}");
            }
            lazuli::Result::Ok(())
        })
        .unwrap();
    }
}

/// `len` values in [-5, 5), the row kernels' test data.
#[cfg(feature = "gpu")]
fn row_data(len: usize) -> Vec<f32> {
    (0..len).map(|i| ((i * 37) % 1001) as f32 / 100.0 - 5.0).collect()
}

/// Where the GPU fuses reductions, softmax over rows is one row kernel: the max, the sum
/// of `exp(x - max)` and the division in one program, nothing written out between them;
/// the values are the CPU's.
#[cfg(feature = "gpu")]
#[test]
fn softmax_is_one_kernel_on_the_gpu() {
    if !crate::common::gpu_available() {
        return;
    }
    let x = row_data(128 * 512);
    let cpu = Array::from_slice(&x, &[128, 512]).unwrap().softmax(&[1]).unwrap().to_vec::<f32>().unwrap();
    on(lazuli::Device::gpu(0), || {
        let y = Array::from_slice(&x, &[128, 512])?.softmax(&[1])?;
        let progs = fusion::programs(&[&y]);
        assert_eq!(progs.len(), 1, "{progs:?}");
        let p = &progs[0];
        let reduces: Vec<_> =
            p.steps.iter().filter_map(|(s, _)| if let Step::Reduce(op, _) = s { Some(*op) } else { None }).collect();
        assert_eq!(reduces, [lazuli::primitive::ReduceOp::Max, lazuli::primitive::ReduceOp::Sum], "{p}");
        assert!(p.reduction.is_none() && p.extra_outputs.is_empty() && p.reduce_axes == [1], "{p}");
        crate::shaders_naga::validate_all_targets("softmax", &lazuli::backend::gpu::fused_source(p)?);
        let before = fusion::regions_run_here();
        let got = fusion::with_enabled(true, || y.to_vec::<f32>())?;
        assert_eq!(fusion::regions_run_here() - before, 1);
        for (g, w) in got.iter().zip(&cpu) {
            assert!((g - w).abs() <= 1e-6 * w.abs() + 1e-9, "{g} vs {w}");
        }
        lazuli::Result::Ok(())
    })
    .unwrap();
}

/// Every form of the GPU's row kernel agrees with the CPU: rows kept in registers (one
/// step a thread, and three with the last one partial), rows too long for registers read
/// four elements a step, and rows of odd length read one at a time; softmax and layer_norm,
/// each one kernel, each naga-validated.
#[cfg(feature = "gpu")]
#[test]
fn row_kernel_forms_agree() {
    if !crate::common::gpu_available() {
        return;
    }
    for cols in [512usize, 2052, 16400, 1030] {
        let rows = 64;
        let x = row_data(rows * cols);
        let f = |x: &Array| -> lazuli::Result<Vec<Array>> { Ok(vec![x.softmax(&[1])?, layer_norm(x)?]) };
        let cpu: Vec<Vec<f32>> =
            f(&Array::from_slice(&x, &[rows, cols]).unwrap()).unwrap().iter().map(|y| y.to_vec().unwrap()).collect();
        on(lazuli::Device::gpu(0), || {
            // Relative for softmax; layer_norm's outputs are O(1), their error set by the
            // row's sums (an output near 0 has cancelled).
            let tol = [(2e-5, 1e-9), (2e-5, 2e-5)];
            for ((y, want), (rel, abs)) in f(&Array::from_slice(&x, &[rows, cols])?)?.iter().zip(&cpu).zip(tol) {
                let progs = fusion::programs(&[y]);
                if fusion::enabled() {
                    assert_eq!(progs.len(), 1, "{cols} columns: {progs:?}");
                    crate::shaders_naga::validate_all_targets(
                        "row kernel",
                        &lazuli::backend::gpu::fused_source(&progs[0])?,
                    );
                }
                let got = y.to_vec::<f32>()?;
                for (i, (g, w)) in got.iter().zip(want).enumerate() {
                    assert!((g - w).abs() <= rel * w.abs() + abs, "{cols} columns, element {i}: {g} vs {w}");
                }
            }
            lazuli::Result::Ok(())
        })
        .unwrap();
    }
}

/// Values the same along a row (a per-row input, a one-element input, constants, and
/// steps of those and of reductions: a comparison, a select, a cast) are computed once a
/// row in the GPU's row kernel, in both its forms, and agree bit for bit with the unfused
/// run, which computes each with its own kernel.
#[cfg(feature = "gpu")]
#[test]
fn row_uniform_values_agree_with_unfused() {
    if !crate::common::gpu_available() {
        return;
    }
    for cols in [1024usize, 1030] {
        // 64 rows: the fewest the GPU fuses a reduction over (one workgroup a row).
        let rows = 64;
        // Each row scaled differently, so each has its own maximum.
        let x: Vec<f32> =
            row_data(rows * cols).iter().enumerate().map(|(i, v)| v * (0.25 + (i / cols) as f32 / 16.0)).collect();
        // Above every row's maximum in one row of three: the select takes both branches.
        let s: Vec<f32> = (0..rows).map(|r| if r % 3 == 0 { 30.0 } else { r as f32 / 8.0 - 2.0 }).collect();
        on(lazuli::Device::gpu(0), || {
            let f = || -> lazuli::Result<Array> {
                let x = Array::from_slice(&x, &[rows, cols])?;
                let s = Array::from_slice(&s, &[rows, 1])?;
                let c = Array::from_slice(&[0.75f32], &[1])?;
                let m = x.max(&[1], true)?;
                let big = m.gt(&s)?;
                let t = lazuli::where_(&big, &(&m * &c)?, &(&s - 1.5)?)?;
                let w = (&(&t + &big.astype(DType::F32)?)?.sqrt()? + 2.0)?;
                &(&x - &t)? / &w
            };
            let y = f()?;
            let progs = fusion::programs(&[&y]);
            if fusion::enabled() {
                assert_eq!(progs.len(), 1, "{cols} columns: {progs:?}");
                assert!(progs[0].reduces(), "{}", progs[0]);
                crate::shaders_naga::validate_all_targets(
                    "row-uniform steps",
                    &lazuli::backend::gpu::fused_source(&progs[0])?,
                );
            }
            let got = y.to_vec::<f32>()?;
            let want = fusion::with_enabled(false, || f()?.to_vec::<f32>())?;
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g.to_bits(), w.to_bits(), "{cols} columns, element {i}: {g} vs {w}");
            }
            lazuli::Result::Ok(())
        })
        .unwrap();
    }
}

/// A row kernel whose inputs are each the same along the row or the same for every row
/// (`a[r] * w[c]`) keeps nothing in registers, so its text does not grow with the row.
#[cfg(feature = "gpu")]
#[test]
fn row_kernel_text_is_bounded() {
    if !crate::common::gpu_available() {
        return;
    }
    let source = |cols: usize| {
        on(lazuli::Device::gpu(0), || {
            let a = Array::from_slice(&vec![0.5f32; 64], &[64, 1])?;
            let w = Array::from_slice(&vec![0.25f32; cols], &[1, cols])?;
            let progs = fusion::programs(&[&(&a * &w)?.softmax(&[1])?]);
            assert_eq!(progs.len(), 1, "{progs:?}");
            lazuli::backend::gpu::fused_source(&progs[0])
        })
        .unwrap()
    };
    assert_eq!(source(4096).len(), source(1 << 16).len());
}

/// A program whose extra outputs make no sense gets an `Err` from the GPU's code
/// generator, not a panic: an index past the steps, or extra outputs on a reduction.
#[cfg(feature = "gpu")]
#[test]
fn bad_extra_outputs_are_errors() {
    let meta = |shape: &[usize]| lazuli::primitive::Meta::new(shape, DType::F32);
    let p = fusion::Program {
        shape: vec![4],
        inputs: vec![meta(&[4])],
        steps: vec![(Step::Input(0), DType::F32), (Step::Unary(lazuli::primitive::UnaryOp::Exp, 0), DType::F32)],
        result: 1,
        reduction: None,
        reduce_axes: vec![],
        output: meta(&[4]),
        extra_outputs: vec![7],
    };
    assert!(lazuli::backend::gpu::fused_source(&p).is_err());
    let r = fusion::Program {
        reduction: Some(lazuli::primitive::ReduceOp::Sum),
        reduce_axes: vec![0],
        output: meta(&[1]),
        extra_outputs: vec![1],
        ..p.clone()
    };
    assert!(lazuli::backend::gpu::fused_source(&r).is_err());
    let ok = fusion::Program { extra_outputs: vec![1], ..p };
    crate::shaders_naga::validate_all_targets("fused, extra output", &lazuli::backend::gpu::fused_source(&ok).unwrap());
}

/// The CPU fuses reductions over trailing axes with their prologue: one region, values
/// within an f32 ulp of the unfused kernels (both fold in f64, in different orders), for
/// short rows that cross chunk boundaries, long rows cut into blocks, several trailing
/// axes, and max as well as sum. A reduction over leading axes is not fused there.
#[test]
fn cpu_fused_reductions_agree() {
    type Case = (&'static str, Vec<usize>, Box<dyn Fn(&Array) -> lazuli::Result<Array>>, bool);
    let cases: Vec<Case> = vec![
        ("var, rows of 7", vec![5000, 7], Box::new(|x| x.var(&[-1], true, 1)), true),
        ("logsumexp, rows of 300", vec![96, 300], Box::new(|x| x.logsumexp(&[-1], false)), true),
        ("sum(exp(x - 1)), one row of 100000", vec![100_000], Box::new(|x| (x - 1.0)?.exp()?.sum(&[0], false)), true),
        ("max(|x| * 2), two rows of 70000", vec![2, 70_000], Box::new(|x| (&x.abs()? * 2.0)?.max(&[1], true)), true),
        ("sum(x^2) over axes 1 and 2", vec![4, 96, 75], Box::new(|x| x.square()?.sum(&[1, 2], false)), true),
        ("sum(x^2) over axis 0", vec![300, 96], Box::new(|x| x.square()?.sum(&[0], false)), false),
    ];
    for (what, shape, f, fuses) in &cases {
        let n: usize = shape.iter().product();
        let data: Vec<f32> = (0..n).map(|i| ((i * 7919 % 1000) as f32 / 250.0) - 2.0).collect();
        let run = |fused: bool| {
            fusion::with_enabled(fused, || {
                on(lazuli::Device::cpu(), || {
                    let y = f(&Array::from_slice(&data, shape)?)?;
                    let regions = fusion::programs(&[&y]).iter().filter(|p| p.reduction.is_some()).count();
                    Ok((y.to_vec::<f32>()?, regions))
                })
            })
            .unwrap()
        };
        let ((plain, _), (got, regions)) = (run(false), run(true));
        assert_eq!(regions > 0, *fuses, "{what}: fused reductions {regions}");
        for (p, q) in plain.iter().zip(&got) {
            assert!((p - q).abs() <= f32::EPSILON * p.abs().max(f32::MIN_POSITIVE), "{what}: unfused {p}, fused {q}");
        }
    }
}

/// Broadcast inputs of a CPU region (a per-row value, a row vector, a middle axis) are
/// read in runs of the last axis, chunks starting mid-row: bit for bit the unfused values.
#[test]
fn cpu_broadcast_reads_match_unfused() {
    let x: Vec<f32> = (0..37 * 3 * 300).map(|i| (i % 1013) as f32 * 0.01 - 5.0).collect();
    let r: Vec<f32> = (0..37).map(|i| i as f32 * 0.5 - 9.0).collect();
    let c: Vec<f32> = (0..300).map(|i| 1.0 + i as f32 / 64.0).collect();
    let m: Vec<f32> = (0..3 * 300).map(|i| (i % 17) as f32 - 8.0).collect();
    let run = |fused: bool| {
        fusion::with_enabled(fused, || {
            on(lazuli::Device::cpu(), || {
                let x = Array::from_slice(&x, &[37, 3, 300])?;
                let y = (&(&(&x * &Array::from_slice(&r, &[37, 1, 1])?)? + &Array::from_slice(&c, &[300])?)?
                    - &Array::from_slice(&m, &[3, 300])?)?
                    .exp()?;
                let regions = fusion::programs(&[&y]).len();
                Ok((y.to_vec::<f32>()?, regions))
            })
        })
        .unwrap()
    };
    let ((plain, _), (fused, regions)) = (run(false), run(true));
    assert_eq!(regions, 1);
    assert!(plain.iter().zip(&fused).all(|(p, f)| p.to_bits() == f.to_bits()));
}

/// A named chain and its expected values.
type Case<'a> = (&'static str, Box<dyn Fn() -> lazuli::Result<Array> + 'a>, Vec<f32>);

/// Fused kernels keep IEEE arithmetic across steps: the shader compiler may not fold
/// `(y + b) - b` to `y` or `q - q` to 0 (lavapipe did, under WGSL's finite-math licence:
/// 1 for 0, 0 for NaN), nor `x == x` to true. Every result is checked against f32
/// arithmetic done here, with the regions fused (at least one region each, also with a
/// trailing sum); four-lane and one-lane kernels both run (lengths 8 and 5).
#[test]
fn fused_kernels_keep_nan_inf_and_rounding() {
    let vals = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, 2.0, -1.5, 1e30, -0.0];
    let big = [1e8f32, 3e38, 1e8, 1e8, 3e38, -1e8, 1e8, 1e8];
    for n in [5usize, 8] {
        let x = Array::from_slice(&vals[..n], &[n]).unwrap();
        let b = Array::from_slice(&big[..n], &[n]).unwrap();
        let ones = Array::from_slice(&vec![1.0f32; n], &[n]).unwrap();
        let cases: Vec<Case> = vec![
            ("(1 + b) - b", Box::new(|| ones.add(&b)?.sub(&b)), big[..n].iter().map(|&b| (1.0f32 + b) - b).collect()),
            (
                "(3x - 3) - 3x",
                Box::new(|| {
                    let a = x.mul(3.0)?;
                    a.sub(3.0)?.sub(&a)
                }),
                vals[..n].iter().map(|&v| (v * 3.0 - 3.0) - v * 3.0).collect(),
            ),
            (
                "x/x - x/x",
                Box::new(|| {
                    let q = x.div(&x)?;
                    q.sub(&q)
                }),
                vals[..n].iter().map(|&v| v / v - v / v).collect(),
            ),
            (
                "where(2x == 2x, 1, 0)",
                Box::new(|| {
                    let a = x.mul(2.0)?;
                    lazuli::where_(&a.eq(&a)?, 1.0, 0.0)
                }),
                vals[..n].iter().map(|&v| if v * 2.0 == v * 2.0 { 1.0 } else { 0.0 }).collect(),
            ),
        ];
        for dev in devices() {
            for (what, f, want) in &cases {
                let y = on(dev, f).unwrap();
                assert!(!fusion::programs(&[&y]).is_empty(), "{dev} {what}: not fused");
                let got = y.to_vec::<f32>().unwrap();
                for (g, w) in got.iter().zip(want) {
                    assert!(
                        g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                        "{dev} n={n} {what}: {got:?} vs {want:?}"
                    );
                }
                let s = on(dev, || f()?.sum(&[], false)).unwrap().item::<f32>().unwrap();
                let ws: f32 = want.iter().sum();
                assert!(s == ws || (s.is_nan() && ws.is_nan()), "{dev} n={n} sum of {what}: {s} vs {ws}");
            }
        }
    }
}
