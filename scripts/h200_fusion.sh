#!/usr/bin/env bash
# Fusion on the H200 (device tool), from the repo root, carrying .gl and .h200: the suite's
# fusion and parity tests, then examples/fusion_bench beside scripts/fusion_ref.py (PyTorch
# eager and torch.compile) in the same call. Prepare here: `cargo test --release --no-run
# --features ndarray --test suite`, `cargo build --release --example fusion_bench`; copy to
# deps/suite and examples/, strip, pack as .h200/fusion.tar.xz.
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export XDG_RUNTIME_DIR=/tmp VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json LAZULI_REQUIRE_GPU=1
root=$PWD; mkdir -p /tmp/h && tar -C /tmp/h -xJf .h200/fusion.tar.xz
echo "== tests (fusion on, then off)"
timeout 200 /tmp/h/deps/suite 2>&1 | grep -E "test result|panicked" -A3 | tee $OUT/tests.log
LAZULI_NO_FUSION=1 timeout 200 /tmp/h/deps/suite 2>&1 | grep -E "test result|panicked" -A3 | tee -a $OUT/tests.log
echo "== fusion bench"
args="--size 67108864 --rows 8192 --cols 8192 --reps 20"
timeout 150 /tmp/h/examples/fusion_bench --device gpu $args 2>&1 | tee $OUT/fusion_lazuli.md
timeout 200 python3 scripts/fusion_ref.py --backend torch $args 2>&1 | grep -v Warning | tee $OUT/fusion_torch.md
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
