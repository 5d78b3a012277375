//! One table of every op family on one device, beside the same rows from NumPy or PyTorch
//! (`scripts/numpy_ops.py`, `scripts/torch_ops.py`; both run `scripts/ops_ref.py`).
//!
//! ```text
//! cargo run --release --example ops_bench -- [--device cpu|gpu] [--size N] [--cols C] [--only add,sum,...]
//! ```
//! Every row is a loop of build -> eval -> synchronize, timed as the best of 3 rounds whose
//! length is picked from a warm call (about 0.3 s a round). Bandwidth rows count the bytes each
//! op must move (inputs plus output, 4 bytes per f32 element, 2 per f16); matrix rows use an
//! `N/C x C` matrix and reduce along its rows. `--size`: elements of the large arrays (default
//! 1M on the CPU, 256M on a GPU); `--cols`: row length (default 1024 on the CPU, 8192 on a GPU).
//!
//! With `LAZULI_GPU_TIMING=1` on a GPU, each row is followed by its kernels' time per call
//! (from GPU timestamps, one more round of the same calls) and the row's value had only
//! that time counted.

#[path = "common/kernel_times.rs"]
mod kernel_times;

use std::cell::RefCell;
use std::time::Instant;

use lazuli::{Array, DType, Device, Error, Result, Stream};

/// Seconds per call of `f`: the best of 3 synchronized rounds, sized from a second call
/// (the first compiles kernels and fills the pools).
fn best(s: &Stream, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    s.synchronize()?;
    let t = Instant::now();
    f()?;
    s.synchronize()?;
    let iters = (0.3 / t.elapsed().as_secs_f64().max(1e-9)).clamp(1.0, 2000.0) as usize;
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        for _ in 0..iters {
            f()?;
        }
        s.synchronize()?;
        best = best.min(t.elapsed().as_secs_f64() / iters as f64);
    }
    if let Some(k) = kernel_times::measure(s, iters, f)? {
        KERNELS.with(|c| *c.borrow_mut() = Some((best, k)));
    }
    Ok(best)
}

thread_local! {
    /// The last [`best`]'s seconds per call and its kernels' time, for [`row`] to print.
    static KERNELS: RefCell<Option<(f64, kernel_times::PerCall)>> = const { RefCell::new(None) };
}

/// One printed row; `scripts/ops_ref.py` prints the same names and units. With kernel
/// times, a second line: the value had only the kernels' time been counted.
fn row(name: &str, size: &str, value: f64, unit: &str) {
    println!("| {name:<30} | {size:>14} | {value:>10.2} | {unit:<7} |");
    if let Some((wall, k)) = KERNELS.with(|c| c.borrow_mut().take()) {
        let scaled = if unit == "us" { value * k.kernels / wall } else { value * wall / k.kernels };
        println!(
            "|   kernels only {:>15} | {:>14} | {scaled:>10.2} | {unit:<7} | {:.1} us/call, busy {:.1} us, idle {:.1} us: {}",
            "",
            "",
            k.kernels * 1e6,
            k.busy * 1e6,
            k.idle * 1e6,
            k.list
        );
    }
}

struct Args {
    device: Device,
    size: Option<usize>,
    cols: Option<usize>,
    only: Option<Vec<String>>,
}

fn parse() -> Result<Args> {
    let mut a = Args { device: Device::gpu(0), size: None, cols: None, only: None };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let bad = |v: &str| Error::Invalid { op: "ops_bench", msg: format!("bad value {v:?} for {flag}") };
        let v = it.next().unwrap_or_default();
        match flag.as_str() {
            "--device" => a.device = v.parse()?,
            "--size" => a.size = Some(v.parse().map_err(|_| bad(&v))?),
            "--cols" => a.cols = Some(v.parse().map_err(|_| bad(&v))?),
            "--only" => a.only = Some(v.split(',').map(String::from).collect()),
            _ => return Err(Error::Invalid { op: "ops_bench", msg: format!("unknown option {flag}") }),
        }
    }
    Ok(a)
}

fn main() -> Result<()> {
    let args = parse()?;
    let dev = args.device;
    let on_cpu = dev == Device::cpu();
    let n = args.size.unwrap_or(if on_cpu { 1 << 20 } else { 1 << 28 });
    let cols = args.cols.unwrap_or(if on_cpu { 1024 } else { 8192 }).min(n);
    let rows = n / cols;
    let want = |r: &str| args.only.as_ref().is_none_or(|v| v.iter().any(|x| x == r));
    let s = lazuli::new_stream(dev)?;
    let what = if on_cpu {
        format!("{} threads", rayon::current_num_threads())
    } else {
        lazuli::backend::gpu::adapter_summary()?
    };
    println!("lazuli {} on {dev} ({what})\n", env!("CARGO_PKG_VERSION"));
    println!("| {:<30} | {:>14} | {:>10} | {:<7} |", "op", "size", "value", "unit");
    println!("| {:-<30} | {:->14} | {:->10} | {:-<7} |", "", "", "", "");
    let gbs = |bytes: f64, t: f64| bytes / t / 1e9;
    let sz = n.to_string();
    let mat = format!("{rows}x{cols}");
    let f4 = n as f64 * 4.0;
    let key = lazuli::random::key(7)?;
    lazuli::with_stream(&s, || {
        let a = lazuli::random::uniform(&key, &[n], -1.0, 1.0, DType::F32)?;
        let b = a.mul(0.5)?;
        let c = a.mul(0.25)?;
        let m = a.reshape(&[rows as isize, cols as isize])?;
        lazuli::eval(&[&a, &b, &c])?;
        if want("add") {
            row("add", &sz, gbs(3.0 * f4, best(&s, || a.add(&b)?.eval())?), "GB/s");
        }
        if want("add_f16") {
            let (h, g) = (a.astype(DType::F16)?, b.astype(DType::F16)?);
            lazuli::eval(&[&h, &g])?;
            row("add f16", &sz, gbs(3.0 * f4 / 2.0, best(&s, || h.add(&g)?.eval())?), "GB/s");
        }
        if want("exp") {
            row("exp", &sz, gbs(2.0 * f4, best(&s, || a.exp()?.eval())?), "GB/s");
        }
        if want("chain") {
            let t = best(&s, || a.mul(&b)?.add(&c)?.exp()?.mul(0.5)?.tanh()?.eval())?;
            row("tanh(exp(a*b+c)*0.5)", &sz, gbs(4.0 * f4, t), "GB/s");
        }
        if want("sum") {
            row("sum", &sz, gbs(f4, best(&s, || a.sum(&[0], false)?.eval())?), "GB/s");
        }
        if want("sum_cols") {
            row("sum over axis 0", &mat, gbs(f4, best(&s, || m.sum(&[0], false)?.eval())?), "GB/s");
        }
        if want("var") {
            row("var over rows", &mat, gbs(f4, best(&s, || m.var(&[1], false, 0)?.eval())?), "GB/s");
        }
        if want("softmax") {
            row("softmax over rows", &mat, gbs(2.0 * f4, best(&s, || m.softmax(&[1])?.eval())?), "GB/s");
        }
        if want("logsumexp") {
            row("logsumexp over rows", &mat, gbs(f4, best(&s, || m.logsumexp(&[1], false)?.eval())?), "GB/s");
        }
        if want("cumsum") {
            row("cumsum over rows", &mat, gbs(2.0 * f4, best(&s, || m.cumsum(1, false)?.eval())?), "GB/s");
        }
        if want("argmax") {
            row("argmax over rows", &mat, gbs(f4, best(&s, || m.argmax(1, false)?.eval())?), "GB/s");
        }
        drop((a, b, c, m));
        if want("chain1000") {
            let x = Array::from_slice(&[1f32, 2., 3., 4.], &[4])?.add(0.0)?;
            x.eval()?;
            let t = best(&s, || {
                let mut y = x.clone();
                for _ in 0..500 {
                    y = y.mul(&x)?.sub(&x)?;
                }
                y.eval()
            })?;
            row("1000-op chain, per op", "4", t / 1000.0 * 1e6, "us");
        }
        if want("tiny") {
            let x = Array::from_slice(&[1f32, 2., 3., 4.], &[4])?.add(0.0)?;
            x.eval()?;
            row("tiny op, eval, read back", "4", best(&s, || x.add(&x)?.to_vec::<f32>().map(drop))? * 1e6, "us");
        }
        if want("gelu_call") {
            // gelu (tanh form, 9 ops) on 4 elements: the host cost of one call, built op by
            // op and through `compile` (which keeps the fused plan: one node per region).
            let x = Array::from_slice(&[0.5f32, -1.0, 2.0, 0.25], &[4])?.add(0.0)?;
            x.eval()?;
            let gelu = |x: &[Array]| -> Result<Vec<Array>> {
                let x = &x[0];
                let inner = (&(x + &(&(x * x)? * x)?.mul(0.044715)?)? * 0.7978845608)?;
                Ok(vec![(&(x * 0.5)? * &(&inner.tanh()? + 1.0)?)?])
            };
            let xs = [x];
            row("gelu call, direct", "4", best(&s, || gelu(&xs)?[0].eval())? * 1e6, "us");
            let f = lazuli::compile(gelu);
            row("gelu call, compiled", "4", best(&s, || f.call(&xs)?[0].eval())? * 1e6, "us");
        }
        if want("transfer") && !on_cpu {
            let len = 64 << 20; // 256 MB of f32 each way
            let host: Vec<f32> = (0..len).map(|i| i as f32).collect();
            let t = best(&s, || {
                let v = Array::from_slice(&host, &[len])?.to_device(dev)?.add(1.0)?.to_vec::<f32>()?;
                assert_eq!(v[len - 1], len as f32);
                Ok(())
            })?;
            row("upload, add, download", "268435456 B", gbs(2.0 * len as f64 * 4.0, t), "GB/s");
        }
        for k in [1024usize, 2048] {
            if want(&format!("matmul{k}")) {
                let x = lazuli::random::uniform(&key, &[k, k], -1.0, 1.0, DType::F32)?;
                let y = x.mul(0.5)?;
                lazuli::eval(&[&x, &y])?;
                let t = best(&s, || {
                    x.matmul(&y)?.eval()?;
                    s.synchronize()
                })?;
                row(&format!("matmul f32 {k}^3"), &k.to_string(), 2.0 * (k as f64).powi(3) / t / 1e9, "GFLOP/s");
            }
        }
        Ok(())
    })
}
