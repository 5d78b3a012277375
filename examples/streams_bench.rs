//! Do two GPU streams' independent kernels overlap? Times a chain of small matmuls (each
//! too small to fill a large GPU) three ways: one chain on one stream, two chains on one
//! stream, and two chains on two streams from two threads. `scripts/torch_streams.py`
//! times the same with two CUDA streams.
//!
//! ```text
//! cargo run --release --example streams_bench -- [--device gpu] [--n 512] [--len 200]
//! ```
//! Prints milliseconds per round (best of 5) and the overlap, `2 x one / two`: 1.0 when
//! the second chain's work runs after the first's, 2.0 when the two run entirely side by
//! side.

use std::time::Instant;

use lazuli::{Array, DType, Device, Error, Result, Stream, with_stream};

/// A chain of `len` dependent matmuls from `x` (scaled so values stay bounded), evaluated.
fn chain(x: &Array, m: &Array, len: usize) -> Result<Array> {
    let mut y = x.clone();
    for _ in 0..len {
        y = y.matmul(m)?;
    }
    y.eval()?;
    Ok(y)
}

/// Best of 5 rounds of `f`, in seconds.
fn best(mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        f()?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    Ok(best)
}

fn main() -> Result<()> {
    let mut dev = Device::gpu(0);
    let (mut n, mut len) = (512usize, 200usize);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = it.next().unwrap_or_default();
        let bad = || Error::Invalid { op: "streams_bench", msg: format!("bad value {v:?} for {flag}") };
        match flag.as_str() {
            "--device" => dev = v.parse()?,
            "--n" => n = v.parse().map_err(|_| bad())?,
            "--len" => len = v.parse().map_err(|_| bad())?,
            _ => return Err(Error::Invalid { op: "streams_bench", msg: format!("unknown option {flag}") }),
        }
    }
    let (a, b): (Stream, Stream) = (lazuli::new_stream(dev)?, lazuli::new_stream(dev)?);
    let key = lazuli::random::key(3)?;
    let make = |s: &Stream| {
        with_stream(s, || {
            let x = lazuli::random::uniform(&key, &[n, n], -1.0, 1.0, DType::F32)?;
            // Entries of 1/n: each product keeps the values' scale.
            let m = lazuli::random::uniform(&key, &[n, n], 0.0, 2.0 / n as f64, DType::F32)?;
            lazuli::eval(&[&x, &m])?;
            Ok::<_, Error>((x, m))
        })
    };
    let ((xa, ma), (xb, mb)) = (make(&a)?, make(&b)?);
    let one = best(|| {
        with_stream(&a, || chain(&xa, &ma, len))?;
        a.synchronize()
    })?;
    let two_on_one = best(|| {
        with_stream(&a, || {
            chain(&xa, &ma, len)?;
            chain(&xb, &mb, len)
        })?;
        a.synchronize()
    })?;
    let two_streams = best(|| {
        std::thread::scope(|sc| {
            let h = sc.spawn(|| with_stream(&b, || chain(&xb, &mb, len)).and_then(|_| b.synchronize()));
            with_stream(&a, || chain(&xa, &ma, len))?;
            a.synchronize()?;
            h.join().map_err(|_| Error::Internal("the second thread panicked".into()))?
        })
    })?;
    let what = if dev == Device::cpu() { "cpu".to_string() } else { lazuli::backend::gpu::adapter_summary()? };
    println!("lazuli {} on {dev} ({what}): chains of {len} matmuls {n}x{n}, f32\n", env!("CARGO_PKG_VERSION"));
    println!("| case | ms | overlap |");
    println!("| --- | ---: | ---: |");
    println!("| one chain, one stream | {:.2} | |", one * 1e3);
    println!("| two chains, one stream | {:.2} | {:.2} |", two_on_one * 1e3, 2.0 * one / two_on_one);
    println!("| two chains, two streams, two threads | {:.2} | {:.2} |", two_streams * 1e3, 2.0 * one / two_streams);
    Ok(())
}
