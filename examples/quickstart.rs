//! A tour of lazuli: build a lazy graph, evaluate it on the CPU and, where a GPU adapter
//! exists, on the GPU, and check the two agree.
//!
//! Run: `cargo run --release --example quickstart`

use lazuli::{Array, Device};

fn main() -> lazuli::Result<()> {
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    // Nothing is computed yet: each call checks shapes and records a node.
    let c = a.matmul(&a)?.add(&a)?.exp()?.sum(&[-1], false)?;
    let d = (&a * 2.0)?;
    let t = a.transpose(&[1, 0])?.reshape(&[4])?;
    lazuli::eval(&[&c, &d, &t])?;
    println!("a            = {:?}", a.to_vec::<f32>()?);
    println!("sum(exp(a@a + a), -1) = {:?}", c.to_vec::<f32>()?);
    println!("a * 2        = {:?}", d.to_vec::<f32>()?);
    println!("a.T flat     = {:?}", t.to_vec::<f32>()?);

    // Random numbers from an explicit key: the same on every device and thread.
    let key = lazuli::random::key(42)?;
    let x = lazuli::random::normal(&key, &[256, 256], 0.0, 1.0, lazuli::DType::F32)?;
    let y = x.matmul(&x)?.mean(&[], false)?;
    println!("mean(x @ x) on cpu = {:.6}", y.item::<f32>()?);

    match lazuli::new_stream(Device::gpu(0)) {
        Ok(gpu) => {
            let e = lazuli::with_stream(&gpu, || x.matmul(&x)?.mean(&[], false))?;
            lazuli::eval(&[&e])?;
            println!("mean(x @ x) on gpu = {:.6}  ({} vs cpu)", e.item::<f32>()?, e.device());
        }
        Err(err) => println!("no GPU: {err}"),
    }
    Ok(())
}
