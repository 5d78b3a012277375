#!/usr/bin/env bash
# Issue 12/13 numbers on the H200 (device tool), from the repo root, carrying .gl and .h200;
# `bash scripts/h200_ops.sh [all | tests ops cpu fusion streams matmul ...]`:
# the tests, then examples/ops_bench beside scripts/ops_ref.py on the GPU (PyTorch) and on
# the host's CPU (NumPy), then examples/fusion_bench beside scripts/fusion_ref.py, all in one
# call. Prepare here: `cargo test --release --no-run --features ndarray`; `cargo build
# --release --example ops_bench --example fusion_bench --example teardown --example
# streams_bench --example matmul_bench`; copy the test
# binaries to deps/<name> and the examples to examples/, strip, pack as .h200/ops.tar.xz.
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export XDG_RUNTIME_DIR=/tmp VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json LAZULI_REQUIRE_GPU=1
b=/tmp/h; mkdir -p $b && tar -C $b -xJf .h200/ops.tar.xz
parts=" ${*:-all} "
has() { [[ "$parts" == *" all "* || "$parts" == *" $1 "* ]]; }
if has tests; then
  echo "== tests"
  for t in suite memory lifecycle device_loss gpu_grid gpu_timeout; do
    echo "-- $t"; timeout 200 $b/deps/$t 2>&1 | grep -E "test result|panicked" -A3
  done 2>&1 | tee $OUT/tests.log
  echo "-- suite, fusion off"; LAZULI_NO_FUSION=1 timeout 200 $b/deps/suite 2>&1 | grep -E "test result|panicked" -A3 | tee -a $OUT/tests.log
  timeout 100 $b/examples/teardown --device gpu --size 512 --threads 2 --sleep-ms 100 --runs 50 2>&1 | tail -1 | tee $OUT/stress.log
fi
if has ops; then
  echo "== ops, GPU beside PyTorch"
  # One file per device (the device tool brings back a few files only).
  {
    timeout 150 $b/examples/ops_bench --device gpu
    # The small rows again in a fresh process (no large arrays before them).
    echo; timeout 60 $b/examples/ops_bench --device gpu --only chain1000,tiny,transfer,matmul1024,matmul2048
    echo; timeout 150 python3 scripts/torch_ops.py
  } 2>&1 | grep -v Warning | tee $OUT/ops_gpu.md
fi
if has cpu; then
  echo "== ops, CPU beside NumPy (1M and 64M)"
  for n in 1048576 67108864; do
    timeout 150 $b/examples/ops_bench --device cpu --size $n
    echo; timeout 150 python3 scripts/numpy_ops.py --size $n; echo
  done 2>&1 | tee $OUT/ops_cpu.md
fi
if has fusion; then
  echo "== fusion"
  args="--size 67108864 --rows 8192 --cols 8192 --reps 20"
  {
    timeout 150 $b/examples/fusion_bench --device gpu $args
    echo; timeout 200 python3 scripts/fusion_ref.py --backend torch $args
  } 2>&1 | grep -v Warning | tee $OUT/fusion.md
fi
if has streams; then
  echo "== streams: two chains of small matmuls on one and two streams"
  {
    for n in 256 512; do
      timeout 60 $b/examples/streams_bench --n $n --len 200; echo
      timeout 60 python3 scripts/torch_streams.py --n $n --len 200; echo
    done
  } 2>&1 | grep -v Warning | tee $OUT/streams.md
fi
if has matmul; then
  echo "== matmul: K split on and off, beside cuBLAS"
  {
    timeout 100 $b/examples/matmul_bench --device gpu --sizes 256,512,1024,2048 --dtypes f32 --iters 10
    echo; LAZULI_MATMUL_SPLIT_K=0 timeout 100 $b/examples/matmul_bench --device gpu --sizes 256,512,1024,2048 --dtypes f32 --iters 10
    echo; timeout 100 python3 scripts/torch_matmul.py 256,512,1024,2048
  } 2>&1 | grep -v Warning | tee $OUT/matmul.md
fi
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; git log -1 --format=%h 2>/dev/null; } | tee $OUT/machine.txt
