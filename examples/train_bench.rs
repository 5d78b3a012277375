//! Training-step throughput: one step of an MLP (forward, backward, AdamW update) on one
//! device, the yardstick against `scripts/torch_train_step.py`.
//!
//! ```text
//! cargo run --release --example train_bench -- [--device cpu|gpu] [--batch 512]
//!     [--in 784] [--hidden 2048] [--layers 2] [--classes 10] [--warmup 3] [--steps 20]
//!     [--phases 5]
//! ```
//! The model is `in -> hidden (x layers, ReLU after each) -> classes`, f32, PyTorch's
//! layout and default init (`nn.Linear`: weight `[out, in]`, weight and bias
//! `U(-1/sqrt(in), 1/sqrt(in))`), trained with `AdamW::new(1e-3)` (betas 0.9/0.999, eps
//! 1e-8, weight decay 1e-2) on mean softmax cross-entropy. Inputs `N(0, 1)` and labels
//! uniform in `0..classes` come from fixed keys and are the same every step, so the
//! loss must fall (the net memorises the batch).
//!
//! One step, all inside the clock: build the graph with `value_and_grad_params` and
//! `Optimizer::update`, then one `lazuli::eval` over the new parameters, the optimiser's
//! moments and the loss, then `synchronize`. The loss is read after the clock stops.
//! `--warmup` steps first (kernel compilation, buffer pool), then `--steps` timed ones.
//!
//! Output, one line each (grep `^train_step` / `^train_profile`):
//! `train_step impl=lazuli device=.. dims=784-2048-2048-10 batch=512 params=P steps=N
//! best_ms=.. median_ms=.. best_steps_s=.. median_steps_s=.. best_tflops=.. median_tflops=..
//! loss_first=.. loss_last=..`, where TFLOP/s counts `6 * P * batch` FLOPs per step (2 for
//! the forward matmuls, 4 for the backward ones; it ignores elementwise work and counts
//! the first layer's input gradient, which is not computed); then the median split of a
//! step into graph building (`build_ms`) and `eval` + `synchronize` (`eval_ms`), and the
//! primitives run per step; then (`train_phases`, unless `--phases 0`) `--phases` more
//! steps that evaluate in three rounds, each synchronized: the loss (forward), the
//! gradients (backward), the new parameters (AdamW), with the median time and the
//! primitives run of each (the extra synchronizations make their sum exceed a step).

use std::time::Instant;

use lazuli::optim::{AdamW, Optimizer};
use lazuli::{Array, DType, Device, Params, Reduction, Stream, nn::init, random};

struct Opts {
    device: Device,
    batch: usize,
    inputs: usize,
    hidden: usize,
    layers: usize,
    classes: usize,
    warmup: usize,
    steps: usize,
    phases: usize,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        device: Device::gpu(0),
        batch: 512,
        inputs: 784,
        hidden: 2048,
        layers: 2,
        classes: 10,
        warmup: 3,
        steps: 20,
        phases: 5,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().ok_or(format!("{a} needs a value"))?;
        let num = |v: &str| v.parse::<usize>().map_err(|e| format!("{a}: {e}"));
        match a.as_str() {
            "--device" => o.device = v.parse().map_err(|e| format!("--device: {e}"))?,
            "--batch" => o.batch = num(&v)?,
            "--in" => o.inputs = num(&v)?,
            "--hidden" => o.hidden = num(&v)?,
            "--layers" => o.layers = num(&v)?,
            "--classes" => o.classes = num(&v)?,
            "--warmup" => o.warmup = num(&v)?,
            "--steps" => o.steps = num(&v)?,
            "--phases" => o.phases = num(&v)?,
            _ => return Err(format!("unknown option {a}")),
        }
    }
    if o.batch == 0 || o.inputs == 0 || o.hidden == 0 || o.classes == 0 || o.steps == 0 {
        return Err("--batch, --in, --hidden, --classes and --steps must be > 0".into());
    }
    Ok(o)
}

/// Layer widths, input first: `[in, hidden x layers, classes]`.
fn dims(o: &Opts) -> Vec<usize> {
    let mut d = vec![o.inputs];
    d.extend(std::iter::repeat_n(o.hidden, o.layers));
    d.push(o.classes);
    d
}

/// Layer `i`'s parameter names; zero-padded so that name order is layer order.
fn names(i: usize) -> (String, String) {
    (format!("l{i:02}.w"), format!("l{i:02}.b"))
}

/// `nn.Linear`'s default init: weight and bias `U(-1/sqrt(in), 1/sqrt(in))`.
fn init_params(dims: &[usize], key: &Array) -> lazuli::Result<Params> {
    let keys = random::split(key, 2 * (dims.len() - 1))?;
    let mut p = Params::new();
    for (i, io) in dims.windows(2).enumerate() {
        let (fan_in, out) = (io[0], io[1]);
        let bound = 1.0 / (fan_in as f64).sqrt();
        let (w, b) = names(i);
        let kw = keys.slice(&[(2 * i as isize).into()])?;
        let kb = keys.slice(&[(2 * i as isize + 1).into()])?;
        p.insert(w, init::uniform(&kw, &[out, fan_in], -bound, bound, DType::F32)?);
        p.insert(b, init::uniform(&kb, &[out], -bound, bound, DType::F32)?);
    }
    Ok(p)
}

/// Logits of the MLP: `x @ w.T + b` per layer, ReLU between layers.
fn forward(p: &Params, x: &Array, n_layers: usize) -> lazuli::Result<Array> {
    let mut h = x.clone();
    for i in 0..n_layers {
        let (w, b) = names(i);
        h = h.matmul(&p[&w].t()?)?.add(&p[&b])?;
        if i + 1 < n_layers {
            h = h.relu()?;
        }
    }
    Ok(h)
}

struct StepTimes {
    build: f64,
    /// Seconds and primitives run of each eval + synchronize: one (everything) in a
    /// timed step; three (loss, gradients, update) in a phased one.
    phases: Vec<(f64, u64)>,
    total: f64,
    loss: f32,
}

/// One training step (see the module docs); returns its times and loss. `phased`
/// evaluates the loss (forward), then the gradients (backward), then the new parameters
/// and moments (AdamW), each followed by `synchronize`, to see where the time goes.
fn step(
    s: &Stream,
    params: &mut Params,
    opt: &mut AdamW,
    x: &Array,
    labels: &Array,
    n_layers: usize,
    phased: bool,
) -> lazuli::Result<StepTimes> {
    let t = Instant::now();
    let (loss, grads) = lazuli::with_stream(s, || {
        let loss_fn = |p: &Params| lazuli::cross_entropy(&forward(p, x, n_layers)?, labels, Reduction::Mean);
        let (loss, grads) = lazuli::value_and_grad_params(loss_fn)(params)?;
        opt.update(params, &grads)?;
        Ok::<_, lazuli::Error>((loss, grads))
    })?;
    let build = t.elapsed().as_secs_f64();
    let state = opt.state();
    let mut everything: Vec<&Array> = params.values().collect();
    everything.extend(state.values());
    everything.push(&loss);
    let stages: Vec<Vec<&Array>> =
        if phased { vec![vec![&loss], grads.values().collect(), everything] } else { vec![everything] };
    let mut phases = Vec::with_capacity(stages.len());
    for outs in &stages {
        let (t0, p0) = (Instant::now(), lazuli::primitives_run());
        lazuli::eval(outs)?;
        lazuli::synchronize(s)?;
        phases.push((t0.elapsed().as_secs_f64(), lazuli::primitives_run() - p0));
    }
    let total = t.elapsed().as_secs_f64();
    Ok(StepTimes { build, phases, total, loss: loss.item::<f32>()? })
}

/// `x` as Python's `f"{x:.4e}"` writes it (`2.3071e+00`), so both scripts' lines match.
fn sci(x: f32) -> String {
    let s = format!("{x:.4e}");
    match s.split_once('e') {
        Some((m, e)) => match e.parse::<i32>() {
            Ok(e) => format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs()),
            Err(_) => s,
        },
        None => s, // NaN, inf
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

fn main() -> lazuli::Result<()> {
    let o = parse().map_err(|e| lazuli::Error::Invalid { op: "train_bench", msg: e })?;
    let s = lazuli::new_stream(o.device)?;
    // Only a GPU run asks for the adapter: on the CPU that would start a driver for nothing.
    let adapter = if o.device == Device::cpu() { String::new() } else { lazuli::backend::gpu::adapter_summary()? };
    println!("device: {}  {adapter}", o.device);
    let dims = dims(&o);
    let n_layers = dims.len() - 1;
    let (mut params, x, labels) = lazuli::with_stream(&s, || {
        let p = init_params(&dims, &random::key(0)?)?;
        let x = random::normal(&random::key(1)?, &[o.batch, o.inputs], 0.0, 1.0, DType::F32)?;
        let labels = random::randint(&random::key(2)?, &[o.batch], 0, o.classes as i64, DType::I32)?;
        Ok::<_, lazuli::Error>((p, x, labels))
    })?;
    {
        let mut all: Vec<&Array> = params.values().collect();
        all.extend([&x, &labels]);
        lazuli::eval(&all)?;
    }
    lazuli::synchronize(&s)?;
    let n_params = params.num_elements();
    let mut opt = AdamW::new(1e-3);

    let mut loss_first = None;
    for _ in 0..o.warmup {
        let st = step(&s, &mut params, &mut opt, &x, &labels, n_layers, false)?;
        loss_first.get_or_insert(st.loss);
    }
    let mut times = Vec::with_capacity(o.steps);
    let mut loss_last = f32::NAN;
    for _ in 0..o.steps {
        let st = step(&s, &mut params, &mut opt, &x, &labels, n_layers, false)?;
        loss_first.get_or_insert(st.loss);
        loss_last = st.loss;
        times.push(st);
    }
    let mut phased = Vec::with_capacity(o.phases);
    for _ in 0..o.phases {
        phased.push(step(&s, &mut params, &mut opt, &x, &labels, n_layers, true)?);
    }

    let med_of = |v: &[StepTimes], f: &dyn Fn(&StepTimes) -> f64| median(&v.iter().map(f).collect::<Vec<_>>());
    let total: Vec<f64> = times.iter().map(|t| t.total).collect();
    let (best, med) = (total.iter().copied().fold(f64::INFINITY, f64::min), median(&total));
    let flops = 6.0 * n_params as f64 * o.batch as f64;
    let dims_s = dims.iter().map(usize::to_string).collect::<Vec<_>>().join("-");
    let dev = if o.device == Device::cpu() { "cpu" } else { "gpu" };
    println!(
        "train_step impl=lazuli device={dev} dims={dims_s} batch={} params={n_params} steps={} best_ms={:.3} \
         median_ms={:.3} best_steps_s={:.2} median_steps_s={:.2} best_tflops={:.4} median_tflops={:.4} \
         loss_first={} loss_last={}",
        o.batch,
        o.steps,
        best * 1e3,
        med * 1e3,
        1.0 / best,
        1.0 / med,
        flops / best / 1e12,
        flops / med / 1e12,
        sci(loss_first.unwrap_or(f32::NAN)),
        sci(loss_last),
    );
    println!(
        "train_profile impl=lazuli device={dev} build_ms={:.3} eval_ms={:.3} primitives_per_step={} \
         flops_per_step={flops:.4e}",
        med_of(&times, &|t| t.build) * 1e3,
        med_of(&times, &|t| t.total - t.build) * 1e3,
        times.last().map_or(0, |t| t.phases[0].1),
    );
    if let Some(last) = phased.last() {
        let phase = |i: usize| (med_of(&phased, &|t| t.phases[i].0) * 1e3, last.phases[i].1);
        let ((f, fp), (b, bp), (u, up)) = (phase(0), phase(1), phase(2));
        println!(
            "train_phases impl=lazuli device={dev} steps={} total_ms={:.3} build_ms={:.3} forward_ms={f:.3} \
             forward_prims={fp} backward_ms={b:.3} backward_prims={bp} update_ms={u:.3} update_prims={up}",
            o.phases,
            med_of(&phased, &|t| t.total) * 1e3,
            med_of(&phased, &|t| t.build) * 1e3,
        );
    }
    Ok(())
}
