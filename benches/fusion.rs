//! Issue 11's fusion patterns, fused and unfused, on every available device, as
//! throughput (criterion prints bytes/s): the 5-op chain `tanh(exp(a*b+c)*0.5)` (three
//! inputs and one output), gelu in its tanh form, softmax and layer_norm over rows (one
//! input, one output), and `relu(x @ w + bias)` (as FLOP/s of its matmul). The table
//! beside PyTorch and NumPy is `examples/fusion_bench.rs` with `scripts/fusion_ref.py`;
//! this bench times the same graphs (`examples/common/fusion_patterns.rs`).
//!
//! Each iteration builds the graph, evaluates it and synchronizes the stream, inputs
//! resident on the device. Fusion is switched with `lazuli::fusion::set_enabled`.
//!
//! Sizes: by default 1M elements and 512 x 512 rows on the CPU and on a software adapter
//! such as lavapipe, 16M and 4096 x 4096 on a real GPU; `LAZULI_BENCH_FULL=1` runs 64M and
//! 8192 x 8192 on a real GPU (the sizes of BENCHMARKS.md's tables).
//!
//! ```text
//! cargo bench --bench fusion                     # quick sizes
//! LAZULI_BENCH_FULL=1 cargo bench --bench fusion  # the tables' sizes on a real GPU
//! ```

#[path = "common/devices.rs"]
mod devices;
#[path = "../examples/common/fusion_patterns.rs"]
mod fusion_patterns;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use fusion_patterns::{chain, gelu_tanh, layer_norm, randn};
use lazuli::{Array, Device, Result};

/// (elements of the flat patterns, rows, columns) for `device`.
fn sizes(device: Device) -> (usize, usize, usize) {
    let full = std::env::var("LAZULI_BENCH_FULL").is_ok_and(|v| v == "1");
    if device == Device::cpu() || lazuli::backend::gpu::is_software_adapter() {
        (1 << 20, 512, 512)
    } else if full {
        (1 << 26, 8192, 8192)
    } else {
        (1 << 24, 4096, 4096)
    }
}

type Pattern<'a> = (&'static str, String, Throughput, Box<dyn Fn() -> Result<Array> + 'a>);

fn bench(c: &mut Criterion) {
    for dev in devices::devices("fusion") {
        let s = lazuli::new_stream(dev).unwrap();
        let (n, r, cols) = sizes(dev);
        let inputs = lazuli::with_stream(&s, || -> Result<_> {
            let flat = (randn(1, &[n])?, randn(2, &[n])?, randn(3, &[n])?);
            let rows = (randn(4, &[r, cols])?, randn(5, &[cols])?, randn(6, &[cols])?);
            let mm = (randn(7, &[r, 1024])?, randn(8, &[1024, 1024])?, randn(9, &[1024])?);
            Ok((flat, rows, mm))
        })
        .unwrap();
        let ((a, b, cc), (m, g, beta), (x, w, bias)) = (&inputs.0, &inputs.1, &inputs.2);
        let bytes = |elems: usize, arrays: usize| Throughput::Bytes((elems * arrays * 4) as u64);
        // The matmul's 2 r 1024 1024 FLOPs, printed as elem/s (as in benches/matmul.rs).
        let flops = Throughput::Elements(2 * r as u64 * 1024 * 1024);
        let patterns: Vec<Pattern> = vec![
            ("chain5", format!("{n}"), bytes(n, 4), Box::new(|| chain(a, b, cc))),
            ("gelu_tanh", format!("{n}"), bytes(n, 2), Box::new(|| gelu_tanh(a))),
            ("softmax", format!("{r}x{cols}"), bytes(r * cols, 2), Box::new(|| m.softmax(&[-1]))),
            ("layer_norm", format!("{r}x{cols}"), bytes(r * cols, 2), Box::new(|| layer_norm(m, g, beta))),
            ("bias_relu_mm", format!("{r}x1024x1024"), flops, Box::new(|| (&x.matmul(w)? + bias)?.relu())),
        ];
        let mut group = c.benchmark_group(format!("fusion_{dev}"));
        group.sample_size(10);
        for (name, size, throughput, f) in &patterns {
            group.throughput(throughput.clone());
            for fused in [true, false] {
                let id = BenchmarkId::new(format!("{name}/{}", if fused { "fused" } else { "unfused" }), size);
                group.bench_function(id, |bench| {
                    lazuli::fusion::set_enabled(fused);
                    bench.iter(|| {
                        lazuli::with_stream(&s, || f()?.eval()).unwrap();
                        lazuli::synchronize(&s).unwrap();
                    })
                });
            }
        }
        lazuli::fusion::set_enabled(true);
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
