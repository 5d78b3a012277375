//! Training end to end on every device: a linear regression recovers known weights, and
//! a small MLP classifies two Gaussian blobs, through `value_and_grad_params`, AdamW and
//! `cross_entropy`.

mod common;

use common::{devices, on};
use lazuli::optim::{AdamW, Optimizer};
use lazuli::{Array, DType, Params, Reduction, random};

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
            let vg = lazuli::value_and_grad_params(loss);
            let mut opt = AdamW::new(0.05).with_weight_decay(0.0);
            for _ in 0..200 {
                let (_, g) = vg(&p)?;
                opt.update(&mut p, &g)?;
                p.eval()?;
            }
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
            let vg =
                lazuli::value_and_grad_params(move |p: &Params| lazuli::cross_entropy(&lf(p)?, &yf, Reduction::Mean));
            let mut opt = AdamW::new(0.05);
            let mut last = f32::INFINITY;
            for _ in 0..150 {
                let (l, g) = vg(&p)?;
                opt.update(&mut p, &g)?;
                lazuli::eval(&[&l])?;
                p.eval()?;
                last = l.item::<f32>()?;
            }
            let pred = logits(&p)?.argmax(1, false)?.astype(DType::I32)?;
            let acc = pred.eq(&y)?.astype(DType::F32)?.mean(&[], false)?.item::<f32>()?;
            Ok::<_, lazuli::Error>((last, acc))
        })
        .unwrap();
        assert!(loss < 0.2 && acc > 0.9, "{d:?}: loss {loss}, accuracy {acc}");
    }
}
