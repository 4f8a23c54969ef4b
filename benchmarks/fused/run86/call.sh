#!/usr/bin/env bash
# Session 15, run 86: version 41, version 8 whose producer issues K(n + 1) before V(n), so that a K load no
# longer queues behind the V stage the consumers release last (the producer issued K(n) then V(n), each
# after its stage's release, and V's is released a block after K's). Consumer SASS op for op version 8's
# (sass_loops.py). fused_forward_test (loop orders incl. v41, whole grid and on 3 CTAs), memcheck and
# racecheck on the small cases (3 CTAs), then versions 8 and 41 and cuDNN interleaved.
# Expected: run 85's version 38 (V waited for before the turn) ran 2% slower, which a late V or K would
# explain; if K loads wait behind V releases, +0.5-2% on D128 full; if not, within 0.3% of version 8.
set -u
export LD_LIBRARY_PATH=$PWD/gpu-carry/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cudnn_lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
[ -n "$cudnn_lib" ] && export LD_LIBRARY_PATH=$cudnn_lib:$LD_LIBRARY_PATH
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
bench() {  # impls b h s d dtype
  echo "== $1 b$2 h$3 s$4 d$5 full $6"
  timeout 60 gpu-carry/attnprof bench --impl $1 --interleave --device cuda -b $2 --heads $3 --kv-heads $3 -s $4 --kv-seq $4 \
    -d $5 --dtype $6 --layout bhsd --no-causal --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror"
}
I=fused:hopper_v8,fused:hopper_v41,cudnn
el "A/B"
for a in "$I 8 16 2048 128 bf16" "$I 2 16 4096 128 bf16" "$I 2 16 4096 128 fp16" "$I 8 16 2048 128 fp16" \
         "$I 32 16 512 128 bf16" "$I 16 16 1024 128 bf16" "$I 8 16 2048 128 bf16" "$I 2 16 4096 128 bf16"; do
  bench $a | tee -a $OUT/bench.txt
done
el "fused_forward_test (loop orders, v41)"
timeout 150 gpu-carry/tests/fused/fused_forward_test --gtest_filter='*LoopOrders*' > $OUT/gtest.log 2>&1; echo "fused rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gtest.log | tr '\n' ' ')"
grep -B2 -A6 "Failure" $OUT/gtest.log | head -20
el "sanitizers: hopper_v41, 3 CTAs"
BUILD=gpu-carry OUT=/tmp/san SAN_TIMEOUT=60 SANPATH="hopper_v41" LAB_ARGS="--persistent-ctas 3" scripts/fused_device.sh sanitize > $OUT/sanitize.txt 2>&1
echo "sanitizer lines: $(grep -c '^san_' $OUT/sanitize.txt), clean: $(grep -E '^san_' $OUT/sanitize.txt | grep -cE 'ERROR SUMMARY: 0 errors|0 hazards displayed')"
el "end"
