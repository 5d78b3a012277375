//! Matmul throughput table for one device, with a correctness check on every size.
//!
//! ```text
//! cargo run --release --example matmul_bench -- [--device cpu|gpu] [--sizes 1024,2048,4096]
//!     [--dtypes f32,f16] [--iters N] [--single R]
//! ```
//! For each size and dtype: GFLOP/s (2·n³ per matmul), inputs resident on the device,
//! after 0.5 s of warm-up, best of three rounds of at least `--iters` matmuls and ~0.2 s. Like `for _ in range(iters): c = a @ b` in NumPy or PyTorch, each
//! result is evaluated and dropped before the next matmul is built, so its memory is
//! recycled; on the GPU the matmuls queue up behind each other and the stream is
//! synchronized once, before the clock stops. Then the first rows of a result are checked
//! against the CPU (f64-accumulated reference) and the max relative error is printed.
//!
//! `--single R` times R products one at a time instead (each built, evaluated and, on a
//! GPU, synchronized alone) and prints the median and the slowest tenth (the 90th
//! percentile of time) as GFLOP/s: the figure for small products, where one product is
//! shorter than a thread pool's wake-up and best-of-loops hides what a caller waits.
//! `python3 scripts/numpy_matmul.py SIZES --single R` prints the same for NumPy.

use std::time::Instant;

use lazuli::{Array, DType, Device};

struct Opts {
    device: Device,
    sizes: Vec<usize>,
    dtypes: Vec<DType>,
    iters: usize,
    single: Option<usize>,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        device: Device::gpu(0),
        sizes: vec![256, 512, 1024, 2048],
        dtypes: vec![DType::F32],
        iters: 10,
        single: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().ok_or(format!("{a} needs a value"))?;
        match a.as_str() {
            "--device" => o.device = v.parse().map_err(|e| format!("--device: {e}"))?,
            "--sizes" => {
                o.sizes =
                    v.split(',').map(|s| s.parse().map_err(|e| format!("--sizes: {e}"))).collect::<Result<_, _>>()?
            }
            "--iters" => o.iters = v.parse().map_err(|e| format!("--iters: {e}"))?,
            "--single" => o.single = Some(v.parse().map_err(|e| format!("--single: {e}"))?),
            "--dtypes" => {
                o.dtypes = v
                    .split(',')
                    .map(|d| match d {
                        "f32" => Ok(DType::F32),
                        "f16" => Ok(DType::F16),
                        _ => Err(format!("unknown dtype {d}")),
                    })
                    .collect::<Result<_, _>>()?
            }
            _ => return Err(format!("unknown option {a}")),
        }
    }
    Ok(o)
}

/// Max relative error of the first rows of `c = a @ b` against the CPU in f64.
fn check(a: &Array, b: &Array, c: &Array, n: usize) -> lazuli::Result<f64> {
    let rows = n.min(8);
    let cpu = lazuli::default_stream(Device::cpu())?;
    lazuli::with_stream(&cpu, || {
        let a64 = a.slice(&[(..rows as isize).into()])?.astype(DType::F64)?;
        let want = a64.matmul(&b.astype(DType::F64)?)?.to_vec::<f64>()?;
        let got = c.slice(&[(..rows as isize).into()])?.astype(DType::F64)?.to_vec::<f64>()?;
        let scale = want.iter().fold(0f64, |m, x| m.max(x.abs())).max(1e-30);
        Ok(got.iter().zip(&want).fold(0f64, |m, (g, w)| m.max((g - w).abs() / scale)))
    })
}

fn main() -> lazuli::Result<()> {
    let o = parse().map_err(|e| lazuli::Error::Invalid { op: "matmul_bench", msg: e })?;
    let s = lazuli::new_stream(o.device)?;
    // Only a GPU run asks for the adapter: on the CPU that would start a driver for nothing.
    let adapter = if o.device == Device::cpu() { String::new() } else { lazuli::backend::gpu::adapter_summary()? };
    println!("device: {}  {adapter}", o.device);
    match o.single {
        None => println!("{:>6} {:>6} {:>12} {:>12} {:>10}", "dtype", "n", "ms/matmul", "GFLOP/s", "max_rel_err"),
        Some(r) => println!(
            "{:>6} {:>6} {:>12} {:>12} {:>12} {:>10}  ({r} products timed alone)",
            "dtype", "n", "median ms", "GFLOP/s", "p90 GFLOP/s", "max_rel_err"
        ),
    }
    for &dt in &o.dtypes {
        for &n in &o.sizes {
            let (ka, kb) = (lazuli::random::key(2 * n as u64)?, lazuli::random::key(2 * n as u64 + 1)?);
            let (a, b) = lazuli::with_stream(&s, || {
                let a = lazuli::random::uniform(&ka, &[n, n], -1.0, 1.0, DType::F32)?.astype(dt)?;
                let b = lazuli::random::uniform(&kb, &[n, n], -1.0, 1.0, DType::F32)?.astype(dt)?;
                Ok::<_, lazuli::Error>((a, b))
            })?;
            lazuli::eval(&[&a, &b])?;
            // Warm-up: compiles the kernel, fills the buffer pool, and keeps the device busy
            // for half a second so its clocks have ramped up (an idle GPU clocks down).
            let c = lazuli::with_stream(&s, || a.matmul(&b))?;
            c.eval()?;
            lazuli::synchronize(&s)?;
            let (warm, mut runs) = (Instant::now(), 0u32);
            while warm.elapsed().as_secs_f64() < 0.5 {
                lazuli::with_stream(&s, || a.matmul(&b))?.eval()?;
                lazuli::synchronize(&s)?;
                runs += 1;
            }
            let flop = 2.0 * (n as f64).powi(3);
            if let Some(r) = o.single {
                let mut times = Vec::with_capacity(r);
                for _ in 0..r.max(1) {
                    let t = Instant::now();
                    lazuli::with_stream(&s, || a.matmul(&b))?.eval()?;
                    lazuli::synchronize(&s)?;
                    times.push(t.elapsed().as_secs_f64());
                }
                times.sort_by(f64::total_cmp);
                let (med, p90) = (times[times.len() / 2], times[times.len() * 9 / 10]);
                let err = check(&a, &b, &c, n)?;
                println!(
                    "{:>6} {:>6} {:>12.4} {:>12.1} {:>12.1} {:>10.2e}",
                    dt.name(),
                    n,
                    med * 1e3,
                    flop / med / 1e9,
                    flop / p90 / 1e9,
                    err
                );
                continue;
            }
            // At least `--iters` per round, and enough for ~0.2 s.
            let per = warm.elapsed().as_secs_f64() / runs as f64;
            let iters = o.iters.max((0.2 / per).ceil() as usize);
            // Best of three rounds, as scripts/numpy_matmul.py and scripts/torch_matmul.py do.
            let mut secs = f64::INFINITY;
            for _ in 0..3 {
                let t = Instant::now();
                for _ in 0..iters {
                    lazuli::with_stream(&s, || a.matmul(&b))?.eval()?;
                }
                lazuli::synchronize(&s)?;
                secs = secs.min(t.elapsed().as_secs_f64() / iters as f64);
            }
            let err = check(&a, &b, &c, n)?;
            let gflops = flop / secs / 1e9;
            println!("{:>6} {:>6} {:>12.3} {:>12.1} {:>10.2e}", dt.name(), n, secs * 1e3, gflops, err);
        }
    }
    Ok(())
}
