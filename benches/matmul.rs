//! f32 matmul throughput on every available device, reported as FLOP/s (2·M·N·K per op;
//! criterion prints it as "elem/s").
//!
//! GPU timing covers the GPU work: inputs are made resident on the device before the
//! clock starts, and each iteration evaluates and then synchronizes the stream, so the
//! clock stops only when the kernel has finished. Nothing is read back.
//!
//! Sizes: by default the sweep stops at 1024 on the CPU and, on a software adapter such as
//! lavapipe, at 256 on the GPU, so it ends in seconds. `LAZULI_BENCH_FULL=1` runs the full
//! sweep (256…4096 square, tall-skinny, batched) for real GPUs.
//!
//! ```text
//! cargo bench --bench matmul                     # quick sweep
//! LAZULI_BENCH_FULL=1 cargo bench --bench matmul  # full sweep
//! ```

#[path = "common/devices.rs"]
mod devices;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use lazuli::{Array, DType, Device, Stream};

/// (label, batch, m, k, n)
type Case = (&'static str, usize, usize, usize, usize);

fn cases(device: Device) -> Vec<Case> {
    let full = std::env::var("LAZULI_BENCH_FULL").is_ok_and(|v| v == "1");
    let mut sq: Vec<usize> = vec![256, 512, 1024, 2048, 4096];
    let limit = match (full, device) {
        (true, _) => 4096,
        (false, d) if d == Device::cpu() => 1024,
        (false, _) if lazuli::backend::gpu::is_software_adapter() => 256,
        (false, _) => 2048,
    };
    sq.retain(|&n| n <= limit);
    let mut v: Vec<Case> = sq.into_iter().map(|n| ("square", 1, n, n, n)).collect();
    let small = limit <= 256;
    v.push(if small { ("tall_skinny", 1, 2048, 64, 64) } else { ("tall_skinny", 1, 16384, 1024, 64) });
    v.push(if small { ("batched", 16, 64, 64, 64) } else { ("batched", 64, 256, 256, 256) });
    v
}

fn resident(s: &Stream, shape: &[usize], seed: u64) -> Array {
    let key = lazuli::random::key(seed).unwrap();
    let x = lazuli::with_stream(s, || lazuli::random::uniform(&key, shape, -1.0, 1.0, DType::F32)).unwrap();
    x.eval().unwrap();
    x
}

fn bench(c: &mut Criterion) {
    for dev in devices::devices("matmul") {
        let s = lazuli::new_stream(dev).unwrap();
        let mut g = c.benchmark_group(format!("matmul_f32_{dev}"));
        g.sample_size(10);
        for (label, b, m, k, n) in cases(dev) {
            let (sa, sb) = if b > 1 { (vec![b, m, k], vec![b, k, n]) } else { (vec![m, k], vec![k, n]) };
            let (x, y) = (resident(&s, &sa, 1), resident(&s, &sb, 2));
            g.throughput(Throughput::Elements((2 * b * m * n * k) as u64));
            g.bench_function(BenchmarkId::new(label, format!("{b}x{m}x{k}x{n}")), |bench| {
                bench.iter(|| {
                    let z = lazuli::with_stream(&s, || x.matmul(&y)).unwrap();
                    z.eval().unwrap();
                    lazuli::synchronize(&s).unwrap();
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
