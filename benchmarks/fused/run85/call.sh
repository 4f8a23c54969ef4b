#!/usr/bin/env bash
# Session 15, run 85: versions 36-40, version 8's D=128 main loop with independent steps in other orders
# (P before the rescale; the K stage released after the softmax; the V wait before the turn; the V stage
# released after the rescale; 36 and 38 together), the docs' "several source variants compiled side by
# side" for the full-attention shapes under 1.03 of cuDNN. fused_forward_test (all five, whole grid and on
# 3 CTAs), then versions 8 and 36-40 and cuDNN interleaved, each result printed as it comes.
# Expected: the SASS of their main loops is version 8's op for op (36), or 5-33 ops moved (37-40), with
# other register choices; sessions 9-14 saw same-source variants move -3% to +3%. Most likely all within
# 0.5% of version 8; a variant 1% faster on both S2k and S4k would go to a grid run.
set -u
export LD_LIBRARY_PATH=$PWD/gpu-carry/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cudnn_lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
[ -n "$cudnn_lib" ] && export LD_LIBRARY_PATH=$cudnn_lib:$LD_LIBRARY_PATH
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
el "fused_forward_test (loop orders)"
timeout 150 gpu-carry/tests/fused/fused_forward_test --gtest_filter='*LoopOrders*:*HopperV8*' > $OUT/gtest.log 2>&1; echo "fused rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gtest.log | tr '\n' ' ')"
grep -B2 -A6 "Failure" $OUT/gtest.log | head -20
bench() {  # impls b h s d dtype
  echo "== $1 b$2 h$3 s$4 d$5 full $6"
  timeout 60 gpu-carry/attnprof bench --impl $1 --interleave --device cuda -b $2 --heads $3 --kv-heads $3 -s $4 --kv-seq $4 \
    -d $5 --dtype $6 --layout bhsd --no-causal --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror"
}
I=fused:hopper_v8,fused:hopper_v36,fused:hopper_v37,fused:hopper_v38,fused:hopper_v39,fused:hopper_v40,cudnn
el "A/B"
for a in "$I 8 16 2048 128 bf16" "$I 2 16 4096 128 bf16" "$I 2 16 4096 128 fp16" "$I 4 16 4096 128 bf16" \
         "$I 8 16 2048 128 fp16" "$I 8 16 2048 128 bf16" "$I 2 16 4096 128 bf16"; do
  bench $a | tee -a $OUT/bench.txt
done
el "end"
