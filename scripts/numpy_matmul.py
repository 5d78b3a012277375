"""NumPy (OpenBLAS) f32 matmul GFLOP/s, the CPU yardstick for BENCHMARKS.md.

python3 scripts/numpy_matmul.py 256,512,1024,2048
"""
import sys
import time

import numpy as np

sizes = [int(s) for s in (sys.argv[1] if len(sys.argv) > 1 else "256,512,1024,2048").split(",")]
rng = np.random.default_rng(0)
print(f"numpy {np.__version__}")
for n in sizes:
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    a @ b
    iters = max(1, int(2e9 / (2 * n**3)))
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(iters):
            a @ b
        best = min(best, (time.perf_counter() - t) / iters)
    print(f"numpy f32 n={n:5d} {best * 1e3:9.3f} ms {2 * n**3 / best / 1e9:8.1f} GFLOP/s")
