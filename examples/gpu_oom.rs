//! Real out-of-memory on a GPU: holds ever more 1 GiB arrays on the device until an
//! allocation fails, and checks that the failure is an `Err(Error::OutOfMemory)` (never
//! an abort), that the device still works after the arrays are dropped, and that the CPU
//! is unaffected. For a GPU with real memory to exhaust (the H200 run); lavapipe aborts
//! on real out-of-memory (as wgpu's own OOM tests note), so CI tests only the limit path.
//!
//! `cargo run --release --example gpu_oom -- [--gib-per-array 1] [--max-arrays 200]`

use lazuli::{DType, Device, Error};

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() -> lazuli::Result<()> {
    let gib = arg("--gib-per-array", 1);
    let max = arg("--max-arrays", 200);
    let gpu = lazuli::default_stream(Device::gpu(0))?;
    println!("gpu: {}", lazuli::backend::gpu::adapter_summary().unwrap_or_default());
    let elems = gib << 28; // f32
    let mut held = Vec::new();
    let mut failure = None;
    for i in 0..max {
        let r = lazuli::with_stream(&gpu, || lazuli::full(&[elems], i as f64, DType::F32)).and_then(|a| {
            a.eval()?;
            Ok(a)
        });
        match r {
            Ok(a) => held.push(a),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    println!("held {} arrays of {gib} GiB ({} GiB) before the first failure", held.len(), held.len() * gib);
    match &failure {
        Some(e) => {
            let kind = match e.root_cause() {
                Error::OutOfMemory { .. } => "OutOfMemory",
                Error::Gpu(_) => "Gpu",
                _ => "other",
            };
            println!("error ({kind}): {e}");
        }
        None => println!("no failure within {max} arrays"),
    }
    // The held arrays are intact and the device recovers once they are gone.
    if let Some(last) = held.last() {
        let v = lazuli::with_stream(&gpu, || last.slice(&[(0..4).into()]))?.to_vec::<f32>()?;
        println!("last held array starts {v:?}");
    }
    drop(held);
    lazuli::synchronize(&gpu)?;
    let after =
        lazuli::with_stream(&gpu, || lazuli::full(&[elems], 7.0, DType::F32)?.sum(&[], false))?.item::<f32>()?;
    println!("after dropping them: a fresh {gib} GiB sum = {after} (want {})", 7.0 * elems as f32);
    let cpu = lazuli::full(&[4], 2.0, DType::F32)?.sum(&[], false)?.item::<f32>()?;
    println!("cpu still works: {cpu}");
    println!(
        "RESULT: {}",
        if matches!(failure.as_ref().map(|e| e.root_cause()), Some(Error::OutOfMemory { .. })) {
            "ok"
        } else {
            "no OutOfMemory error seen"
        }
    );
    Ok(())
}
