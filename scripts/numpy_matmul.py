"""NumPy (OpenBLAS) f32 matmul GFLOP/s, the CPU yardstick for BENCHMARKS.md.

python3 scripts/numpy_matmul.py 256,512,1024,2048 [--single R]

Without --single: best of three loops of back-to-back products, as `matmul_bench` does.
With --single R: R products timed one at a time, median and 90th percentile of time (as
GFLOP/s), as `matmul_bench --single R` does.
"""
import sys
import time

import numpy as np

args = sys.argv[1:]
single = None
if "--single" in args:
    i = args.index("--single")
    single = int(args[i + 1])
    del args[i : i + 2]
sizes = [int(s) for s in (args[0] if args else "256,512,1024,2048").split(",")]
rng = np.random.default_rng(0)
print(f"numpy {np.__version__}")
for n in sizes:
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    a @ b
    flop = 2 * n**3
    if single is not None:
        # The same warm-up as matmul_bench: half a second of products.
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.5:
            a @ b
        times = []
        for _ in range(max(1, single)):
            t = time.perf_counter()
            a @ b
            times.append(time.perf_counter() - t)
        times.sort()
        med, p90 = times[len(times) // 2], times[len(times) * 9 // 10]
        print(
            f"numpy f32 n={n:5d} median {med * 1e3:9.4f} ms {flop / med / 1e9:8.1f} GFLOP/s"
            f"  p90 {flop / p90 / 1e9:8.1f} GFLOP/s"
        )
        continue
    iters = max(1, int(2e9 / flop))
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(iters):
            a @ b
        best = min(best, (time.perf_counter() - t) / iters)
    print(f"numpy f32 n={n:5d} {best * 1e3:9.3f} ms {flop / best / 1e9:8.1f} GFLOP/s")
