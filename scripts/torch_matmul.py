"""PyTorch (cuBLAS) matmul TFLOP/s on the GPU, TF32 off: the yardstick for BENCHMARKS.md.

python3 scripts/torch_matmul.py 1024,2048,4096,8192
"""
import sys

import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
sizes = [int(s) for s in (sys.argv[1] if len(sys.argv) > 1 else "1024,2048,4096,8192").split(",")]
print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
for dtype in (torch.float32, torch.float16):
    for n in sizes:
        a = torch.rand(n, n, device="cuda", dtype=dtype) * 2 - 1
        b = torch.rand(n, n, device="cuda", dtype=dtype) * 2 - 1
        for _ in range(3):
            a @ b
        torch.cuda.synchronize()
        iters = max(3, int(2e13 / (2 * n**3)))
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            a @ b
        end.record()
        torch.cuda.synchronize()
        secs = start.elapsed_time(end) / 1e3 / iters
        print(f"torch {str(dtype).split('.')[-1]:8s} n={n:5d} {secs * 1e3:9.3f} ms {2 * n**3 / secs / 1e12:8.2f} TFLOP/s")
