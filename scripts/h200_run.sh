#!/usr/bin/env bash
# Runs on the H200 (device tool), from the repo root, carrying .gl and .h200.
# Prepare here: cargo test --release --no-run; cargo build --release --examples; copy the
# gpu_parity, lifecycle and teardown test binaries to .h200/deps/<name> and the teardown and
# matmul_bench examples to .h200/examples/, strip them (the carry limit is 64 MiB).
# .gl: shared/facts/h200-vulkan.md.
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export XDG_RUNTIME_DIR=/tmp VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json LAZULI_REQUIRE_GPU=1
root=$PWD; cd .h200
echo "== tests"
for t in gpu_parity lifecycle teardown transforms; do echo "-- $t"; timeout 150 deps/$t 2>&1 | grep -E "test result|panicked" -A3; done 2>&1 | tee $OUT/tests.log
echo "-- gpu_parity LAZULI_NO_COOP=1"; LAZULI_NO_COOP=1 timeout 100 deps/gpu_parity 2>&1 | grep -E "test result|panicked" | tee -a $OUT/tests.log
if [ -x examples/matmul_bench ]; then  # left out when the carry limit is tight
echo "== matmul"
timeout 200 ./examples/matmul_bench --device gpu --sizes 1024,2048,4096,8192 --dtypes f32,f16 --iters 10 2>&1 | tee $OUT/matmul.log
LAZULI_NO_COOP=1 timeout 100 ./examples/matmul_bench --device gpu --sizes 1024,2048,4096,8192 --dtypes f16 --iters 10 2>&1 | tee $OUT/matmul_nocoop.log
timeout 90 python3 $root/scripts/torch_matmul.py 1024,2048,4096,8192 2>&1 | tee $OUT/torch.log
fi
echo "== exit stress"
timeout 100 ./examples/teardown --device gpu --size 512 --threads 2 --sleep-ms 100 --runs 100 2>&1 | tail -1 | tee $OUT/stress.log
timeout 100 ./examples/teardown --device gpu --churn --threads 2 --sleep-ms 50 --runs 100 2>&1 | tail -1 | tee -a $OUT/stress.log
echo "== train step"
# Needs .h200/examples/train_bench too (cargo build --release --example train_bench, stripped).
timeout 50 ./examples/train_bench --device gpu --batch 512 --hidden 2048 --layers 2 --warmup 3 --steps 20 --phases 5 2>&1 | tee $OUT/train.log
timeout 120 python3 -u $root/scripts/torch_train_step.py --batch 512 --hidden 2048 --layers 2 --warmup 3 --steps 20 2>&1 | tee -a $OUT/train.log
