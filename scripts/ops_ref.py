#!/usr/bin/env python3
"""The rows of examples/ops_bench.rs in NumPy (CPU) or PyTorch (CUDA), timed and counted the
same way: build -> compute -> synchronize, best of 3 rounds sized from a first call (about
0.3 s a round); bandwidth rows count inputs plus output.

    python3 scripts/ops_ref.py --backend numpy [--size 1048576] [--cols 1024] [--only add,sum]
    python3 scripts/ops_ref.py --backend torch [--size 268435456] [--cols 8192]

scripts/numpy_ops.py and scripts/torch_ops.py are this script with the backend chosen.
"""
import argparse
import os
import time


def main(backend=None):
    p = argparse.ArgumentParser()
    p.add_argument("--backend", choices=["numpy", "torch"], default=backend or "numpy")
    p.add_argument("--size", type=int)
    p.add_argument("--cols", type=int)
    p.add_argument("--only")
    a = p.parse_args()
    on_cpu = a.backend == "numpy"
    n = a.size or (1 << 20 if on_cpu else 1 << 28)
    cols = min(a.cols or (1024 if on_cpu else 8192), n)
    rows = n // cols
    only = set(a.only.split(",")) if a.only else None
    want = lambda r: only is None or r in only

    if on_cpu:
        import numpy as xp

        sync = lambda: None
        what = f"numpy {xp.__version__}, {os.cpu_count()} cpus"
        rand = lambda *s: (xp.random.default_rng(7).random(s, dtype=xp.float32) * 2 - 1)
        keep = {"keepdims": True}
        softmax = lambda m: (lambda e: e / e.sum(1, **keep))(xp.exp(m - m.max(1, **keep)))
        logsumexp = lambda m: (lambda mx: mx[:, 0] + xp.log(xp.exp(m - mx).sum(1)))(m.max(1, **keep))
        var = lambda m: m.var(1)
        tiny = lambda x: (x + x).tolist()
        half = lambda x: x.astype(xp.float16)
    else:
        import torch as xp

        torch = xp
        torch.backends.cuda.matmul.allow_tf32 = False
        sync = torch.cuda.synchronize
        what = f"torch {torch.__version__} {torch.cuda.get_device_name()}"
        rand = lambda *s: torch.rand(*s, device="cuda") * 2 - 1
        softmax = lambda m: m.softmax(1)
        logsumexp = lambda m: m.logsumexp(1)
        var = lambda m: m.var(1, unbiased=False)
        tiny = lambda x: (x + x).cpu()
        half = lambda x: x.half()

    def best(f):
        t = time.perf_counter()
        f()
        sync()
        iters = int(min(max(0.3 / max(time.perf_counter() - t, 1e-9), 1), 2000))
        b = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            for _ in range(iters):
                f()
            sync()
            b = min(b, (time.perf_counter() - t) / iters)
        return b

    def row(name, size, value, unit):
        print(f"| {name:<30} | {size:>14} | {value:>10.2f} | {unit:<7} |")

    print(f"{what}\n")
    print(f"| {'op':<30} | {'size':>14} | {'value':>10} | {'unit':<7} |")
    print(f"| {'':-<30} | {'':->14} | {'':->10} | {'':-<7} |")
    gbs = lambda nbytes, t: nbytes / t / 1e9
    sz, mat, f4 = str(n), f"{rows}x{cols}", n * 4.0
    a_ = rand(n)
    b_, c_ = a_ * 0.5, a_ * 0.25
    m = a_.reshape(rows, cols)
    if want("add"):
        row("add", sz, gbs(3 * f4, best(lambda: a_ + b_)), "GB/s")
    if want("add_f16"):
        h, g = half(a_), half(b_)
        row("add f16", sz, gbs(3 * f4 / 2, best(lambda: h + g)), "GB/s")
        del h, g
    if want("exp"):
        row("exp", sz, gbs(2 * f4, best(lambda: xp.exp(a_))), "GB/s")
    if want("chain"):
        row("tanh(exp(a*b+c)*0.5)", sz, gbs(4 * f4, best(lambda: xp.tanh(xp.exp(a_ * b_ + c_) * 0.5))), "GB/s")
    if want("sum"):
        row("sum", sz, gbs(f4, best(lambda: a_.sum())), "GB/s")
    if want("sum_cols"):
        row("sum over axis 0", mat, gbs(f4, best(lambda: m.sum(0))), "GB/s")
    if want("var"):
        row("var over rows", mat, gbs(f4, best(lambda: var(m))), "GB/s")
    if want("softmax"):
        row("softmax over rows", mat, gbs(2 * f4, best(lambda: softmax(m))), "GB/s")
    if want("logsumexp"):
        row("logsumexp over rows", mat, gbs(f4, best(lambda: logsumexp(m))), "GB/s")
    if want("cumsum"):
        row("cumsum over rows", mat, gbs(2 * f4, best(lambda: m.cumsum(1))), "GB/s")
    if want("argmax"):
        row("argmax over rows", mat, gbs(f4, best(lambda: m.argmax(1))), "GB/s")
    del a_, b_, c_, m
    x = rand(4)

    def chain():
        y = x
        for _ in range(500):
            y = y * x - x

    if want("chain1000"):
        row("1000-op chain, per op", "4", best(chain) / 1000 * 1e6, "us")
    if want("tiny"):
        row("tiny op, eval, read back", "4", best(lambda: tiny(x)) * 1e6, "us")
    if want("gelu_call"):
        # gelu (tanh form) on 4 elements: the host cost of one call of 9 ops.
        def gelu(x):
            return x * 0.5 * (xp.tanh((x + x * x * x * 0.044715) * 0.7978845608) + 1.0)

        row("gelu call, direct", "4", best(lambda: gelu(x)) * 1e6, "us")
        if not on_cpu:
            compiled = torch.compile(gelu)
            row("gelu call, compiled", "4", best(lambda: compiled(x)) * 1e6, "us")
    if want("transfer") and not on_cpu:
        ln = 64 << 20
        host = xp.arange(ln, dtype=xp.float32)

        def transfer():
            v = (host.to("cuda") + 1).cpu()
            assert v[ln - 1].item() == ln

        row("upload, add, download", "268435456 B", gbs(2 * ln * 4, best(transfer)), "GB/s")
    for k in (1024, 2048):
        if want(f"matmul{k}"):
            p_ = rand(k, k)
            q_ = p_ * 0.5
            row(f"matmul f32 {k}^3", str(k), 2 * k**3 / best(lambda: (p_ @ q_, sync())) / 1e9, "GFLOP/s")


if __name__ == "__main__":
    main()
