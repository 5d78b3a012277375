#!/usr/bin/env python3
"""The patterns of examples/fusion_bench.rs in NumPy (CPU) or PyTorch eager and torch.compile
(CUDA), timed and counted the same way: best of 5 rounds of `reps` calls after a warm-up,
GB/s over the bytes the Rust example names (chain: 3 inputs + 1 output; the rest 1 + 1).

    python3 scripts/fusion_ref.py --backend numpy --size 1048576 --rows 512 --cols 512
    python3 scripts/fusion_ref.py --backend torch --size 67108864 --rows 8192 --cols 8192
"""
import argparse
import math
import time


def patterns(xp, n, r, c, rng):
    a, b, cc = (rng(n) for _ in range(3))
    m = rng(r, c)
    g, beta = rng(c), rng(c)
    x, w, bias = rng(r, 1024), rng(1024, 1024), rng(1024)
    k = math.sqrt(2.0 / math.pi)

    def chain():
        return xp.tanh(xp.exp(a * b + cc) * 0.5)

    def gelu_tanh():
        return (a * 0.5) * (xp.tanh((a + (a * a * a) * 0.044715) * k) + 1.0)

    def softmax():
        e = xp.exp(m - m.max(-1, keepdims=True) if xp.__name__ == "numpy" else m - m.amax(-1, keepdim=True))
        return e / (e.sum(-1, keepdims=True) if xp.__name__ == "numpy" else e.sum(-1, keepdim=True))

    def layer_norm():
        if xp.__name__ == "numpy":
            mean, var = m.mean(-1, keepdims=True), m.var(-1, keepdims=True)
        else:
            mean, var = m.mean(-1, keepdim=True), m.var(-1, keepdim=True, unbiased=False)
        return (m - mean) / xp.sqrt(var + 1e-5) * g + beta

    def bias_relu_mm():
        return xp.maximum(x @ w + bias, 0) if xp.__name__ == "numpy" else xp.relu(x @ w + bias)

    gb = lambda elems, arrays: elems * arrays * 4 / 1e9
    return [
        ("chain5", f"{n}", gb(n, 4), chain),
        ("gelu_tanh", f"{n}", gb(n, 2), gelu_tanh),
        ("softmax", f"{r}x{c}", gb(r * c, 2), softmax),
        ("layer_norm", f"{r}x{c}", gb(r * c, 2), layer_norm),
        ("bias_relu_mm", f"{r}x1024x1024", 0.0, bias_relu_mm),
    ]


def best(f, reps, sync):
    for _ in range(2):
        f()
    sync()
    t_best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(reps):
            f()
        sync()
        t_best = min(t_best, (time.perf_counter() - t) / reps)
    return t_best


def show(gbytes, t):
    return f"{gbytes / t:.1f} GB/s" if gbytes > 0 else f"{t * 1e3:.3f} ms"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--backend", choices=["numpy", "torch"], default="numpy")
    p.add_argument("--size", type=int, default=1 << 24)
    p.add_argument("--rows", type=int, default=4096)
    p.add_argument("--cols", type=int, default=4096)
    p.add_argument("--reps", type=int, default=10)
    o = p.parse_args()
    if o.backend == "numpy":
        import numpy as np

        gen = np.random.default_rng(0)
        rng = lambda *s: gen.standard_normal(s, dtype=np.float32)
        print(f"numpy {np.__version__}")
        print("| pattern | size | numpy |")
        print("| --- | --- | ---: |")
        for name, size, gbytes, f in patterns(np, o.size, o.rows, o.cols, rng):
            print(f"| {name} | {size} | {show(gbytes, best(f, o.reps, lambda: None))} |", flush=True)
        return
    import torch

    torch.manual_seed(0)
    rng = lambda *s: torch.randn(*s, device="cuda", dtype=torch.float32)
    sync = torch.cuda.synchronize
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    print("| pattern | size | torch eager | torch.compile |")
    print("| --- | --- | ---: | ---: |")
    for name, size, gbytes, f in patterns(torch, o.size, o.rows, o.cols, rng):
        eager = show(gbytes, best(f, o.reps, sync))
        try:
            compiled = show(gbytes, best(torch.compile(f), o.reps, sync))
        except Exception as e:  # no triton or no compiler on the host: say so, keep going
            compiled = f"n/a ({type(e).__name__})"
        print(f"| {name} | {size} | {eager} | {compiled} |", flush=True)


if __name__ == "__main__":
    main()
