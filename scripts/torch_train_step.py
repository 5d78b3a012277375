"""PyTorch training-step throughput, the yardstick for examples/train_bench.rs.

python3 scripts/torch_train_step.py [--batch 512] [--in 784] [--hidden 2048] [--layers 2]
    [--classes 10] [--warmup 3] [--steps 20] [--modes eager,eager-fused,compile]

The same step as train_bench: an MLP in -> hidden (x layers, ReLU after each) -> classes
(nn.Sequential of nn.Linear / nn.ReLU, PyTorch's default init), f32 with TF32 off,
nn.CrossEntropyLoss (mean) on N(0, 1) inputs and labels uniform in 0..classes that are
the same every step, torch.optim.AdamW(lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
weight_decay=1e-2). One step: zero_grad, forward, loss, backward, optimizer step, then
torch.cuda.synchronize(); each step is timed alone on the wall clock after --warmup
untimed ones, and the loss is read after the clock stops.

Modes: eager (AdamW's default implementation: foreach on CUDA), eager-fused
(AdamW(fused=True)), compile (torch.compile of the model, and of optimizer.step as in
PyTorch's "compiling the optimizer" recipe; a failure, such as no Triton or no C
compiler on the machine, is reported on its line and the other modes still run). Every
mode starts from the same initial weights.

Output, one line per mode (grep ^train_step), in train_bench's format; TFLOP/s counts
6 * params * batch FLOPs per step (2 forward, 4 backward; elementwise work ignored).
Without CUDA it runs on the CPU and says so.
"""
import argparse
import statistics
import sys
import time

import torch
from torch import nn


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--in", dest="inputs", type=int, default=784)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--modes", default="eager,eager-fused,compile")
    return ap.parse_args()


def make_model(dims, device):
    layers = []
    for i, (fan_in, out) in enumerate(zip(dims[:-1], dims[1:])):
        layers.append(nn.Linear(fan_in, out))
        if i + 2 < len(dims):
            layers.append(nn.ReLU())
    return nn.Sequential(*layers).to(device=device, dtype=torch.float32)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def run_mode(mode, args, dims, init_state, x, y, device):
    """Returns (per-step seconds of the timed steps, first loss, last loss)."""
    model = make_model(dims, device)
    model.load_state_dict(init_state)
    kw = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2)
    if mode == "eager-fused":
        kw["fused"] = True
    opt = torch.optim.AdamW(model.parameters(), **kw)
    loss_fn = nn.CrossEntropyLoss()
    fwd = model
    opt_step = opt.step
    if mode == "compile":
        fwd = torch.compile(model)

        @torch.compile(fullgraph=False)
        def opt_step():
            opt.step()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(fwd(x), y)
        loss.backward()
        opt_step()
        return loss

    first = None
    for _ in range(args.warmup):
        loss = step()
        sync(device)
        if first is None:
            first = loss.item()
    times, last = [], float("nan")
    for _ in range(args.steps):
        t = time.perf_counter()
        loss = step()
        sync(device)
        times.append(time.perf_counter() - t)
        last = loss.item()
        if first is None:
            first = last
    return times, first, last


def main():
    args = parse()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    if torch.cuda.is_available():
        device = torch.device("cuda")
        name = torch.cuda.get_device_name()
    else:
        device = torch.device("cpu")
        name = "cpu"
        print("NOTE: CUDA is not available; running on the CPU (these are not GPU numbers)", flush=True)
    print(f"torch {torch.__version__} on {name}, TF32 off", flush=True)
    dims = [args.inputs] + [args.hidden] * args.layers + [args.classes]
    torch.manual_seed(0)
    init_state = {k: v.clone() for k, v in make_model(dims, device).state_dict().items()}
    x = torch.randn(args.batch, args.inputs, device=device, dtype=torch.float32)
    y = torch.randint(0, args.classes, (args.batch,), device=device)
    n_params = sum(v.numel() for v in init_state.values())
    flops = 6.0 * n_params * args.batch
    dims_s = "-".join(map(str, dims))
    head = f"device={device.type} dims={dims_s} batch={args.batch} params={n_params} steps={args.steps}"
    failed = False
    for mode in args.modes.split(","):
        impl = f"torch-{mode}"
        if mode not in ("eager", "eager-fused", "compile"):
            print(f"train_step impl={impl} {head} FAILED: unknown mode {mode}", flush=True)
            failed = True
            continue
        try:
            t0 = time.perf_counter()
            times, first, last = run_mode(mode, args, dims, init_state, x, y, device)
            wall = time.perf_counter() - t0
        except Exception as e:  # noqa: BLE001 - report any failure (compile) and go on
            msg = str(e).strip().splitlines()
            msg = msg[0][:300] if msg else ""
            print(f"train_step impl={impl} {head} FAILED: {type(e).__name__}: {msg}", flush=True)
            failed = True
            continue
        best, med = min(times), statistics.median(times)
        print(
            f"train_step impl={impl} {head} best_ms={best * 1e3:.3f} median_ms={med * 1e3:.3f} "
            f"best_steps_s={1 / best:.2f} median_steps_s={1 / med:.2f} "
            f"best_tflops={flops / best / 1e12:.4f} median_tflops={flops / med / 1e12:.4f} "
            f"loss_first={first:.4e} loss_last={last:.4e} mode_wall_s={wall:.1f}",
            flush=True,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
