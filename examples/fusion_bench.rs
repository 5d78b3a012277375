//! Fused against unfused: the patterns of issue 11, on one device, in one table.
//!
//! ```text
//! cargo run --release --example fusion_bench -- [--device cpu|gpu] [--size N] [--rows R]
//!     [--cols C] [--reps K]
//! ```
//! Rows: the 5-op chain `tanh(exp(a*b+c)*0.5)` over `N` f32 (bytes: 3 inputs + 1 output),
//! gelu in its tanh form (1 in + 1 out), softmax and layer_norm over the rows of an
//! `R x C` matrix (1 in + 1 out), and `relu(a @ w + bias)` of `R x 1024 x 1024` (ms).
//! Each pattern runs with fusion on and off in the same process: `K` evaluations of a
//! freshly built graph (inputs resident on the device), the stream synchronized once
//! before the clock stops, best of 5 rounds after a warm-up. GB/s counts the bytes named
//! above once, as the PyTorch and NumPy rows of `scripts/fusion_ref.py` do; a fused
//! result is checked against the unfused one before anything is timed. The last column
//! is the best fused round's time before its synchronize, per evaluation: the host's
//! part (building, planning, recording, submitting, and any wait for the GPU inside).
//!
//! With `LAZULI_GPU_TIMING=1` on a GPU, each row is followed by the fused evaluations'
//! kernel time (GPU timestamps, one more round) and the bandwidth that time alone gives.

#[path = "common/fusion_patterns.rs"]
mod fusion_patterns;
#[path = "common/kernel_times.rs"]
mod kernel_times;

use std::time::Instant;

use fusion_patterns::{chain, gelu_tanh, layer_norm, randn};
use lazuli::{Array, Device};

struct Opts {
    device: Device,
    size: usize,
    rows: usize,
    cols: usize,
    reps: usize,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts { device: Device::gpu(0), size: 1 << 24, rows: 4096, cols: 4096, reps: 10 };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().ok_or(format!("{a} needs a value"))?;
        let num = |v: &str| v.parse::<usize>().map_err(|e| format!("{a}: {e}"));
        match a.as_str() {
            "--device" => o.device = v.parse().map_err(|e| format!("--device: {e}"))?,
            "--size" => o.size = num(&v)?,
            "--rows" => o.rows = num(&v)?,
            "--cols" => o.cols = num(&v)?,
            "--reps" => o.reps = num(&v)?.max(1),
            _ => return Err(format!("unknown option {a}")),
        }
    }
    Ok(o)
}

/// Best seconds per evaluation of `f` over 5 rounds of `reps`, after a warm-up, and the
/// seconds per evaluation that round spent issuing work (building, planning, recording,
/// submitting: everything before the final synchronize).
fn time(s: &lazuli::Stream, reps: usize, f: &dyn Fn() -> lazuli::Result<Array>) -> lazuli::Result<(f64, f64)> {
    for _ in 0..2 {
        f()?.eval()?;
    }
    s.synchronize()?;
    let (mut best, mut issue) = (f64::INFINITY, 0.0);
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..reps {
            f()?.eval()?;
        }
        let issued = t.elapsed().as_secs_f64();
        s.synchronize()?;
        let took = t.elapsed().as_secs_f64();
        if took < best * reps as f64 {
            (best, issue) = (took / reps as f64, issued / reps as f64);
        }
    }
    Ok((best, issue))
}

/// Largest difference between the fused and unfused results, relative to the largest value.
fn agreement(f: &dyn Fn() -> lazuli::Result<Array>) -> lazuli::Result<f64> {
    lazuli::fusion::set_enabled(false);
    let plain = f()?.to_vec::<f32>()?;
    lazuli::fusion::set_enabled(true);
    let fused = f()?.to_vec::<f32>()?;
    let scale = plain.iter().fold(0f32, |m, v| m.max(v.abs())).max(f32::MIN_POSITIVE);
    Ok(plain.iter().zip(&fused).fold(0f64, |m, (p, q)| m.max(((p - q).abs() / scale) as f64)))
}

fn main() -> lazuli::Result<()> {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("fusion_bench: {e}");
            std::process::exit(2);
        }
    };
    let s = lazuli::default_stream(o.device)?;
    lazuli::with_stream(&s, || {
        let (n, r, c) = (o.size, o.rows, o.cols);
        let (a, b, cc) = (randn(1, &[n])?, randn(2, &[n])?, randn(3, &[n])?);
        let m = randn(4, &[r, c])?;
        let (g, beta) = (randn(5, &[c])?, randn(6, &[c])?);
        let (x, w, bias) = (randn(7, &[r, 1024])?, randn(8, &[1024, 1024])?, randn(9, &[1024])?);
        type Pattern<'a> = (&'a str, String, f64, Box<dyn Fn() -> lazuli::Result<Array> + 'a>);
        let gb = |elems: usize, arrays: usize| (elems * arrays * 4) as f64 / 1e9;
        let patterns: Vec<Pattern> = vec![
            ("chain5", format!("{n}"), gb(n, 4), Box::new(|| chain(&a, &b, &cc))),
            ("gelu_tanh", format!("{n}"), gb(n, 2), Box::new(|| gelu_tanh(&a))),
            ("softmax", format!("{r}x{c}"), gb(r * c, 2), Box::new(|| m.softmax(&[-1]))),
            ("layer_norm", format!("{r}x{c}"), gb(r * c, 2), Box::new(|| layer_norm(&m, &g, &beta))),
            ("bias_relu_mm", format!("{r}x1024x1024"), 0.0, Box::new(|| (&x.matmul(&w)? + &bias)?.relu())),
        ];
        let what = if o.device == Device::cpu() {
            format!("{} threads", std::thread::available_parallelism().map_or(1, |n| n.get()))
        } else {
            lazuli::backend::gpu::adapter_summary()?
        };
        println!("fusion_bench on {} ({what}), {} reps per round", o.device, o.reps);
        println!("| pattern | size | fused | unfused | speed-up | max rel diff | fused: issued, us/eval |");
        println!("| --- | --- | ---: | ---: | ---: | ---: | ---: |");
        for (name, size, gbytes, f) in &patterns {
            let diff = agreement(f.as_ref())?;
            lazuli::fusion::set_enabled(true);
            let (on, issued) = time(&s, o.reps, f.as_ref())?;
            lazuli::fusion::set_enabled(false);
            let (off, _) = time(&s, o.reps, f.as_ref())?;
            lazuli::fusion::set_enabled(true);
            let show = |t: f64| {
                if *gbytes > 0.0 { format!("{:.1} GB/s", gbytes / t) } else { format!("{:.3} ms", t * 1e3) }
            };
            println!(
                "| {name} | {size} | {} | {} | {:.2}x | {diff:.1e} | {:.1} |",
                show(on),
                show(off),
                off / on,
                issued * 1e6
            );
            if let Some(k) = kernel_times::measure(&s, o.reps, || f().and_then(|a| a.eval()))? {
                println!(
                    "|   fused kernels only | | {} | | | | {:.1} us/eval, busy {:.1} us, idle between batches {:.1} us: {} |",
                    show(k.kernels),
                    k.kernels * 1e6,
                    k.busy * 1e6,
                    k.idle * 1e6,
                    k.list
                );
            }
        }
        Ok(())
    })
}
