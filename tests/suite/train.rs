//! Training end to end on every device: a linear regression recovers known weights (exact
//! data, and noisy data), and small MLPs classify two Gaussian blobs and Fisher's iris,
//! through `value_and_grad_params`, AdamW, `cross_entropy` and `mse`.

use crate::common;

use common::{devices, on};
use lazuli::nn::init::{self, FanMode};
use lazuli::optim::{AdamW, Optimizer};
use lazuli::{Array, DType, Params, Reduction, Result, random};

/// `steps` full-batch steps of `opt` on `loss`, the learning rate `lr(step)` each step,
/// evaluating the new parameters and the loss together; the last loss.
fn fit(
    p: &mut Params,
    opt: &mut AdamW,
    steps: usize,
    lr: impl Fn(usize) -> f64,
    loss: impl Fn(&Params) -> Result<Array>,
) -> Result<f32> {
    let vg = lazuli::value_and_grad_params(loss);
    let mut last = f32::NAN;
    for i in 0..steps {
        opt.set_learning_rate(lr(i));
        let (l, g) = vg(p)?;
        opt.update(p, &g)?;
        let mut outs: Vec<&Array> = p.values().collect();
        outs.push(&l);
        lazuli::eval(&outs)?;
        last = l.item::<f32>()?;
    }
    Ok(last)
}

/// The fraction of rows of `logits` whose largest entry is at the label `y` (int32).
fn accuracy(logits: &Array, y: &Array) -> Result<f32> {
    logits.argmax(1, false)?.astype(DType::I32)?.eq(y)?.astype(DType::F32)?.mean(&[], false)?.item::<f32>()
}

/// y = X w* + b* (no noise): 200 steps of AdamW from zero must find w* and b*.
#[test]
fn regression_recovers_known_weights() {
    for d in devices() {
        let (w, b) = on(d, || {
            let x = random::normal(&random::key(1)?, &[64, 3], 0.0, 1.0, DType::F32)?;
            let w_true = Array::from_slice(&[2.0f32, -1.0, 0.5], &[3, 1])?;
            let y = x.matmul(&w_true)?.add(0.25)?;
            let mut p = Params::new();
            p.insert("w", lazuli::zeros(&[3, 1], DType::F32)?);
            p.insert("b", lazuli::zeros(&[1], DType::F32)?);
            let loss = move |p: &Params| lazuli::mse(&x.matmul(&p["w"])?.add(&p["b"])?, &y, Reduction::Mean);
            fit(&mut p, &mut AdamW::new(0.05).with_weight_decay(0.0), 200, |_| 0.05, loss)?;
            Ok((p["w"].to_vec::<f32>()?, p["b"].to_vec::<f32>()?))
        })
        .unwrap();
        for (got, want) in w.iter().zip([2.0f32, -1.0, 0.5]) {
            assert!((got - want).abs() < 0.02, "{d:?}: w {w:?}");
        }
        assert!((b[0] - 0.25).abs() < 0.02, "{d:?}: b {b:?}");
    }
}

/// Two blobs centred at ±(1.5, 1.5) with unit variance are separable to ~98.6%: a 2-16-2
/// MLP must reach a mean cross-entropy below 0.2 and 90% accuracy.
#[test]
fn mlp_classifies_two_blobs() {
    for d in devices() {
        let (loss, acc) = on(d, || {
            let n = 128;
            let labels: Vec<i32> = (0..n).map(|i| (i % 2) as i32).collect();
            let centres: Vec<f32> = labels.iter().flat_map(|&l| [3.0 * l as f32 - 1.5; 2]).collect();
            let noise = random::normal(&random::key(3)?, &[n, 2], 0.0, 1.0, DType::F32)?;
            let x = noise.add(&Array::from_slice(&centres, &[n, 2])?)?;
            let y = Array::from_slice(&labels, &[n])?;
            let keys = random::split(&random::key(4)?, 2)?;
            let mut p = Params::new();
            p.insert(
                "w1",
                lazuli::nn::init::glorot_uniform(
                    &keys.take(&Array::scalar(0i32)?, Some(0))?,
                    &[2, 16],
                    1.0,
                    DType::F32,
                )?,
            );
            p.insert("b1", lazuli::zeros(&[16], DType::F32)?);
            p.insert(
                "w2",
                lazuli::nn::init::glorot_uniform(
                    &keys.take(&Array::scalar(1i32)?, Some(0))?,
                    &[16, 2],
                    1.0,
                    DType::F32,
                )?,
            );
            p.insert("b2", lazuli::zeros(&[2], DType::F32)?);
            let (xf, yf) = (x.clone(), y.clone());
            let logits = move |p: &Params| xf.matmul(&p["w1"])?.add(&p["b1"])?.relu()?.matmul(&p["w2"])?.add(&p["b2"]);
            let lf = logits.clone();
            let ce = move |p: &Params| lazuli::cross_entropy(&lf(p)?, &yf, Reduction::Mean);
            let last = fit(&mut p, &mut AdamW::new(0.05), 150, |_| 0.05, ce)?;
            Ok::<_, lazuli::Error>((last, accuracy(&logits(&p)?, &y)?))
        })
        .unwrap();
        assert!(loss < 0.2 && acc > 0.9, "{d:?}: loss {loss}, accuracy {acc}");
    }
}

/// Fisher's iris (the `irisdata` crate; `examples/train_mlp.rs` is the long version):
/// 10 flowers per species held out (every fifth, from a fixed pseudo-random offset per
/// species), features standardised with the training set's statistics, a 4-16-3 ReLU MLP
/// trained full-batch for 60 steps of AdamW.
///
/// Thresholds: chance is a loss of ln 3 = 1.10 and 33% accuracy; a model that only
/// separates setosa (the linearly separable species) and guesses between the other two
/// scores 67% with a loss near (2/3) ln 2 = 0.46. A loss below 0.2, 95% training and
/// 90% test accuracy (27 of 30) can only come from telling versicolor from virginica
/// too. Measured: loss 0.033, 99.2% train, 96.7% test, on both devices. The same keys give
/// the same data and initial weights everywhere, so the GPU's loss must also match the
/// CPU's.
#[test]
fn mlp_learns_iris() {
    let (features, labels): (Vec<f32>, Vec<i32>) = {
        use irisdata::Species::*;
        let rows = irisdata::IRIS_DATA;
        let x = rows.iter().flat_map(|r| [r.sepal_length, r.sepal_width, r.petal_length, r.petal_width]).collect();
        let y = rows
            .iter()
            .map(|r| match r.species {
                IrisSetosa => 0,
                IrisVersicolor => 1,
                IrisVirginica => 2,
            })
            .collect();
        (x, y)
    };
    // Held out: flowers i with i % 5 == offset[species], the offsets from a fixed LCG, so
    // every species gives exactly 10 of its 50 to the test set.
    let mut state = 12345u64;
    let mut offset = [0usize; 3];
    for o in &mut offset {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *o = (state >> 33) as usize % 5;
    }
    let (train, test): (Vec<usize>, Vec<usize>) = (0..labels.len()).partition(|&i| i % 5 != offset[labels[i] as usize]);
    assert_eq!((train.len(), test.len()), (120, 30));
    let mut results = Vec::new();
    for d in devices() {
        let r = on(d, || {
            let idx = |v: &[usize]| Array::from_slice(&v.iter().map(|&i| i as i32).collect::<Vec<_>>(), &[v.len()]);
            let (tr, te) = (idx(&train)?, idx(&test)?);
            let x = Array::from_slice(&features, &[labels.len(), 4])?;
            let y = Array::from_slice(&labels, &[labels.len()])?;
            let (x_train, x_test) = (x.take(&tr, Some(0))?, x.take(&te, Some(0))?);
            let (mean, std) = (x_train.mean(&[0], true)?, x_train.std(&[0], true, 0)?);
            let x_train = x_train.sub(&mean)?.div(&std)?;
            let x_test = x_test.sub(&mean)?.div(&std)?;
            let (y_train, y_test) = (y.take(&tr, Some(0))?, y.take(&te, Some(0))?);

            let keys = random::split(&random::key(0)?, 2)?;
            let key = |i: isize| keys.slice(&[i.into()]);
            let mut p = Params::new();
            p.insert("l0.w", init::he_uniform(&key(0)?, &[16, 4], FanMode::FanIn, DType::F32)?);
            p.insert("l0.b", lazuli::zeros(&[16], DType::F32)?);
            p.insert("l1.w", init::glorot_uniform(&key(1)?, &[3, 16], 1.0, DType::F32)?);
            p.insert("l1.b", lazuli::zeros(&[3], DType::F32)?);
            let logits = |p: &Params, x: &Array| {
                x.matmul(&p["l0.w"].t()?)?.add(&p["l0.b"])?.relu()?.matmul(&p["l1.w"].t()?)?.add(&p["l1.b"])
            };
            let ce = |p: &Params| lazuli::cross_entropy(&logits(p, &x_train)?, &y_train, Reduction::Mean);
            let loss = fit(&mut p, &mut AdamW::new(0.05), 60, |_| 0.05, ce)?;
            let train_acc = accuracy(&logits(&p, &x_train)?, &y_train)?;
            Ok::<_, lazuli::Error>((loss, train_acc, accuracy(&logits(&p, &x_test)?, &y_test)?))
        })
        .unwrap();
        let (loss, train_acc, test_acc) = r;
        eprintln!("{d:?}: iris loss {loss:.4}, train accuracy {train_acc:.3}, test accuracy {test_acc:.3}");
        assert!(loss < 0.2 && train_acc >= 0.95 && test_acc >= 0.9, "{d:?}: {r:?}");
        results.push(r);
    }
    for r in &results[1..] {
        assert!((r.0 - results[0].0).abs() < 2e-3, "the GPU's loss {} vs the CPU's {}", r.0, results[0].0);
    }
}

/// y = X w* + b* + e with e ~ N(0, 0.1²), 256 samples of 4 features: full-batch AdamW
/// from zeros, the learning rate decaying linearly to 1% so that the last steps settle.
///
/// Thresholds: the least-squares fit differs from w* by the noise, with a standard error
/// of about 0.1 / sqrt(256) ≈ 0.006 per weight; 0.03 is five of them (measured: 0.012,
/// on w[1]; after 150 steps the weights are within 2e-4 of where 600 take them). The
/// training MSE of the least-squares fit is about σ² = 0.01 (here 0.0106, this draw's
/// noise); it must lie within 20% of σ²: above, the fit has not converged; below, it
/// would be fitting the noise, which 5 parameters for 256 samples cannot do.
#[test]
fn regression_recovers_weights_through_noise() {
    const W: [f32; 4] = [2.0, -1.0, 0.5, 0.0];
    for d in devices() {
        let (w, b, mse) = on(d, || {
            let keys = random::split(&random::key(7)?, 2)?;
            let x = random::normal(&keys.slice(&[0.into()])?, &[256, 4], 0.0, 1.0, DType::F32)?;
            let noise = random::normal(&keys.slice(&[1.into()])?, &[256, 1], 0.0, 0.1, DType::F32)?;
            let y = x.matmul(&Array::from_slice(&W, &[4, 1])?)?.add(0.25)?.add(&noise)?;
            let mut p = Params::new();
            p.insert("w", lazuli::zeros(&[4, 1], DType::F32)?);
            p.insert("b", lazuli::zeros(&[1], DType::F32)?);
            let loss = |p: &Params| lazuli::mse(&x.matmul(&p["w"])?.add(&p["b"])?, &y, Reduction::Mean);
            let steps = 150;
            let lr = |i: usize| 0.1 * (1.0 - 0.99 * i as f64 / (steps - 1) as f64);
            let mse = fit(&mut p, &mut AdamW::new(0.1).with_weight_decay(0.0), steps, lr, loss)?;
            Ok::<_, lazuli::Error>((p["w"].to_vec::<f32>()?, p["b"].item::<f32>()?, mse))
        })
        .unwrap();
        eprintln!("{d:?}: w {w:?}, b {b}, mse {mse}");
        for (got, want) in w.iter().zip(W) {
            assert!((got - want).abs() < 0.03, "{d:?}: w {w:?}, want {W:?}");
        }
        assert!((b - 0.25).abs() < 0.03, "{d:?}: b {b}, want 0.25");
        assert!((0.008..0.012).contains(&mse), "{d:?}: mse {mse}, the noise variance is 0.01");
    }
}
