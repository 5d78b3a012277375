//! A tour of what lazuli is for: lazy graphs, devices that agree, `async_eval`, and a
//! process that exits cleanly while a background thread has GPU work in flight.
//!
//! Run: `cargo run --example quickstart` (the same profile as `cargo test`, so it reuses
//! that build; on headless Linux set `XDG_RUNTIME_DIR=/tmp` for Mesa).

use std::process::Command;

use lazuli::{Array, DType, Device};

fn main() -> lazuli::Result<()> {
    // 1. Laziness: building checks shapes and dtypes and records nodes; nothing runs.
    let before = lazuli::primitives_run();
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    let c = a.matmul(&a)?.add(&a)?.exp()?.sum(&[-1], false)?;
    // (Printing reads values, so it would evaluate: show only what building knows.)
    println!("built sum(exp(a @ a + a), -1): shape {:?}, {}, evaluated: {}", c.shape(), c.dtype(), c.is_evaluated());
    println!("primitives run while building: {}", lazuli::primitives_run() - before);
    lazuli::eval(&[&c])?;
    println!("after eval: {} primitives ran", lazuli::primitives_run() - before);
    println!("a =\n{a}\nresult = {c:.3}\n");

    // 2. Devices: the adapter in use, and the same computation on each device.
    let key = lazuli::random::key(42)?;
    let x = lazuli::random::normal(&key, &[256, 256], 0.0, 1.0, DType::F32)?;
    let on_cpu = x.matmul(&x)?.tanh()?.mean(&[0], false)?;
    match lazuli::default_stream(Device::gpu(0)) {
        Ok(_) => {
            println!("GPU adapter: {}", lazuli::backend::gpu::adapter_summary()?);
            // The op follows its input to the GPU (README: the device rule).
            let g = x.to_device(Device::gpu(0))?;
            let on_gpu = g.matmul(&g)?.tanh()?.mean(&[0], false)?;
            let diff = on_cpu.sub(&on_gpu.to_device(Device::cpu())?)?.abs()?.max(&[], false)?;
            println!(
                "tanh(x @ x) column means, first 4: cpu {:.5}, gpu {:.5}",
                on_cpu.slice(&lazuli::s![..4])?,
                on_gpu.slice(&lazuli::s![..4])?
            );
            println!("largest cpu/gpu difference: {:.2e} ({})\n", diff.item::<f32>()?, on_gpu.device());
        }
        Err(e) => println!("no GPU ({e}); CPU only: {:.5}\n", on_cpu.slice(&lazuli::s![..4])?),
    }

    // 3. async_eval: start work, do something else, read the result when it is needed.
    let big = x.matmul(&x)?.matmul(&x)?.sum(&[], false)?;
    lazuli::async_eval(&[&big])?;
    println!("async_eval returned at once; evaluated yet: {}", big.is_evaluated());
    println!("sum(x @ x @ x) = {:.3} (the read waited for it)\n", big.item::<f32>()?);

    // 4. The founding problem (MLX #3126): a background thread loops GPU matmuls while
    // main returns. Run the teardown example as a child and show how it ended.
    let exe = std::env::current_exe().expect("own path");
    let teardown = exe.with_file_name(format!("teardown{}", std::env::consts::EXE_SUFFIX));
    if teardown.exists() {
        let device = if lazuli::default_stream(Device::gpu(0)).is_ok() { "gpu" } else { "cpu" };
        let out = Command::new(&teardown)
            .args(["--device", device, "--threads", "2", "--size", "64", "--sleep-ms", "600"])
            .output()
            .expect("run the teardown example");
        let steps = String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.starts_with("Step")).count();
        println!(
            "background threads on the {device}, main returned after 600 ms: {steps} steps, exit {:?} (no crash)",
            out.status.code()
        );
    } else {
        println!("(build the teardown example to see a clean exit under load: cargo build --example teardown)");
    }
    Ok(())
}
