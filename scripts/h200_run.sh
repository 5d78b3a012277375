#!/usr/bin/env bash
# Runs on the H200 (device tool), from the repo root, carrying .gl and .h200.
# Prepare here: cargo test --release --no-run; cargo build --release --examples; copy the
# gpu_parity, lifecycle and teardown test binaries to .h200/deps/<name> and the teardown,
# matmul_bench and quickstart examples to .h200/examples/, strip them (64 MiB limit).
# .gl: shared/facts/h200-vulkan.md.
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export XDG_RUNTIME_DIR=/tmp VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json LAZULI_REQUIRE_GPU=1
root=$PWD; cd .h200
echo "== tests"
for t in gpu_parity lifecycle teardown; do echo "-- $t"; timeout 150 deps/$t 2>&1 | grep -E "^test |test result|on gpu|status" | head -40; done 2>&1 | tee $OUT/tests.log
echo "== stress"
timeout 120 ./examples/teardown --device gpu --size 512 --threads 2 --sleep-ms 100 --runs 100 2>&1 | tail -3 | tee $OUT/stress.log
timeout 120 ./examples/teardown --device gpu --churn --threads 2 --sleep-ms 50 --runs 100 2>&1 | tail -3 | tee -a $OUT/stress.log
echo "== matmul"
timeout 120 ./examples/matmul_bench --device gpu --sizes 1024,2048,4096,8192 --dtypes f32,f16 --iters 10 2>&1 | tee $OUT/matmul.log
timeout 90 python3 $root/scripts/torch_matmul.py 1024,2048,4096,8192 2>&1 | tee $OUT/torch.log
