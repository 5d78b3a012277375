#!/usr/bin/env python3
"""examples/streams_bench.rs in PyTorch: chains of small matmuls on one and two CUDA streams.

python3 scripts/torch_streams.py [--n 512] [--len 200]
"""
import argparse, time

import torch

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=512)
p.add_argument("--len", type=int, default=200)
a = p.parse_args()
n, length = a.n, a.len
dev = torch.device("cuda")
g = torch.Generator(device=dev).manual_seed(3)
x = [torch.rand(n, n, device=dev, generator=g) * 2 - 1 for _ in range(2)]
m = [torch.rand(n, n, device=dev, generator=g) * (2.0 / n) for _ in range(2)]
streams = [torch.cuda.Stream(), torch.cuda.Stream()]


def chain(k):
    y = x[k]
    for _ in range(length):
        y = y @ m[k]
    return y


def best(f):
    f()
    torch.cuda.synchronize()
    t = float("inf")
    for _ in range(5):
        s = time.perf_counter()
        f()
        torch.cuda.synchronize()
        t = min(t, time.perf_counter() - s)
    return t


def two_streams():
    for k in range(2):
        with torch.cuda.stream(streams[k]):
            chain(k)


one = best(lambda: chain(0))
two_on_one = best(lambda: (chain(0), chain(1)))
two = best(two_streams)
print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}: chains of {length} matmuls {n}x{n}, f32 (TF32 off: {not torch.backends.cuda.matmul.allow_tf32})\n")
print("| case | ms | overlap |")
print("| --- | ---: | ---: |")
print(f"| one chain, one stream | {one * 1e3:.2f} | |")
print(f"| two chains, one stream | {two_on_one * 1e3:.2f} | {2 * one / two_on_one:.2f} |")
print(f"| two chains, two streams | {two * 1e3:.2f} | {2 * one / two:.2f} |")
