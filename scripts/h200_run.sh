#!/usr/bin/env bash
# Runs on the H200 (device tool), from the repo root, carrying .gl and .h200.
# Prepare here: cargo test --release --no-run; cargo build --release --example teardown
# --example gpu_oom; copy the test binaries named below to deps/<name> and the examples to
# examples/, strip them, and pack both folders as .h200/bins.tar.xz (xz brings ~125 MB of
# binaries under the 64 MiB carry limit). .gl: shared/facts/h200-vulkan.md.
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export XDG_RUNTIME_DIR=/tmp VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json LAZULI_REQUIRE_GPU=1
root=$PWD; cd .h200; tar -xJf bins.tar.xz
echo "== tests"
# The suite is one binary (tests/suite/); the other four change process-wide state.
for t in suite lifecycle device_loss gpu_grid gpu_timeout; do
  echo "-- $t"; timeout 300 deps/$t 2>&1 | grep -E "test result|panicked|nothing to check" -A3
done 2>&1 | tee $OUT/tests.log
echo "-- gpu_parity LAZULI_NO_COOP=1"; LAZULI_NO_COOP=1 timeout 100 deps/suite gpu_parity:: 2>&1 | grep -E "test result|panicked" | tee -a $OUT/tests.log
echo "== exit stress"
timeout 100 ./examples/teardown --device gpu --size 512 --threads 2 --sleep-ms 100 --runs 100 2>&1 | tail -1 | tee $OUT/stress.log
timeout 100 ./examples/teardown --device gpu --churn --threads 2 --sleep-ms 50 --runs 100 2>&1 | tail -1 | tee -a $OUT/stress.log
echo "== real out-of-memory"
timeout 120 ./examples/gpu_oom 2>&1 | tail -8 | tee $OUT/oom.log
