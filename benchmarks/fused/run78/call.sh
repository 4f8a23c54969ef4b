#!/usr/bin/env bash
# Session 14, run 78: versions 31 and 32, version 8 (D=128) and version 11 (D=64) with setmaxnreg's
# split at 240 and 224 registers per consumer thread instead of 232: the same source, other register
# assignments and op orders (936-1338 of ~2500 SASS lines differ). fused_forward_test (v31, v32), then
# an A/B on the full-attention shapes under 1.03 of cuDNN (D=128 S2k/S4k bf16+fp16, D=64 S2k) and two
# shorter ones; the two D=128 bf16 shapes twice.
# Expected: each variant within +-2% of its parent (ptxas's spread, runs 43-47), sign unknown.
set -u
FINAL=$OUT
OUT=$(mktemp -d)
trap 'tar -czf "$FINAL/run.tgz" -C "$OUT" .' EXIT
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
export LD_LIBRARY_PATH=$PWD/gpu-carry/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cudnn_lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
[ -n "$cudnn_lib" ] && export LD_LIBRARY_PATH=$cudnn_lib:$LD_LIBRARY_PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
el "fused_forward_test (v31, v32)"
timeout 100 gpu-carry/tests/fused/fused_forward_test --gtest_filter='*V31*:*V32*' > $OUT/gtest.log 2>&1; echo "fused rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gtest.log | tr '\n' ' ')"
grep -B2 -A6 "Failure" $OUT/gtest.log | head -30
bench() {  # impls b h s d dtype
  echo "== $1 b$2 h$3 s$4 d$5 full $6"
  timeout 120 gpu-carry/attnprof bench --impl $1 --interleave --device cuda -b $2 --heads $3 --kv-heads $3 -s $4 --kv-seq $4 \
    -d $5 --dtype $6 --layout bhsd --no-causal --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror"
}
el "A/B"
I=fused:hopper_v8,fused:hopper_v31,fused:hopper_v32,cudnn
J=fused:hopper_v11,fused:hopper_v31,fused:hopper_v32,cudnn
{
bench $I 2 16 4096 128 bf16
bench $I 8 16 2048 128 bf16
bench $J 4 16 2048 64 bf16
bench $I 2 16 4096 128 fp16
bench $I 8 16 2048 128 fp16
bench $J 16 32 1024 64 bf16
bench $I 32 16 512 128 bf16
bench $I 2 16 4096 128 bf16
bench $I 8 16 2048 128 bf16
bench $J 4 16 2048 64 bf16
} > $OUT/bench.txt 2>&1; cat $OUT/bench.txt
el "end"
