#!/usr/bin/env bash
# Session 14, run 79: run 78 again with the setmaxnreg splits inside the launch allocation. Run 78's
# versions 31 and 32 (240/32 and 224/64 registers) asked for more than a 384-thread CTA holds (168 x 384 =
# 64512, not 65536) and hung in setmaxnreg.inc; now 240/24 and 224/56 (the static_assert checks the
# launch allocation). fused_forward_test (v31, v32), then the A/B, each result printed as it comes.
# Expected: each variant within +-2% of its parent, sign unknown.
set -u
export LD_LIBRARY_PATH=$PWD/gpu-carry/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cudnn_lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
[ -n "$cudnn_lib" ] && export LD_LIBRARY_PATH=$cudnn_lib:$LD_LIBRARY_PATH
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
el "fused_forward_test (v31, v32)"
timeout 60 gpu-carry/tests/fused/fused_forward_test --gtest_filter='*V31*:*V32*' > $OUT/gtest.log 2>&1; echo "fused rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gtest.log | tr '\n' ' ')"
grep -B2 -A6 "Failure" $OUT/gtest.log | head -20
bench() {  # impls b h s d dtype
  echo "== $1 b$2 h$3 s$4 d$5 full $6"
  timeout 60 gpu-carry/attnprof bench --impl $1 --interleave --device cuda -b $2 --heads $3 --kv-heads $3 -s $4 --kv-seq $4 \
    -d $5 --dtype $6 --layout bhsd --no-causal --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror"
}
I=fused:hopper_v8,fused:hopper_v31,fused:hopper_v32,cudnn
J=fused:hopper_v11,fused:hopper_v31,fused:hopper_v32,cudnn
el "A/B"
for a in "$I 2 16 4096 128 bf16" "$I 8 16 2048 128 bf16" "$J 4 16 2048 64 bf16" "$I 2 16 4096 128 fp16" "$I 8 16 2048 128 fp16" \
         "$J 16 32 1024 64 bf16" "$I 2 16 4096 128 bf16" "$I 8 16 2048 128 bf16"; do
  bench $a | tee -a $OUT/bench.txt
done
el "end"
