#!/usr/bin/env bash
# Session 14, run 81: version 33, version 8 with each warpgroup's next first Q K^T issued in one turn with
# its last P V, so that it runs under the epilogue (version 8a of run 14, now on version 8's early Q).
# fused_forward_test (v33 uncapped and on 3 CTAs), sanitizers on hopper_v33 (3 CTAs), then an A/B of
# version 8, version 33 and cuDNN, each result printed as it comes.
# Expected: run 80's timers put a tile's fixed part at 2.0 us of 25.4 at B8 H16 S2k D128 full; hiding the
# first S (0.5 us) and part of the epilogue: +2-4% at S2k, +1-2% at S4k, unknown at S512 (version 8a lost
# 4% there on version 7); its main loop has 777 SASS instructions to version 8's 733 (ptxas), which
# may cost 1-2%.
set -u
export LD_LIBRARY_PATH=$PWD/gpu-carry/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cudnn_lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
[ -n "$cudnn_lib" ] && export LD_LIBRARY_PATH=$cudnn_lib:$LD_LIBRARY_PATH
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
el "fused_forward_test (v33)"
timeout 60 gpu-carry/tests/fused/fused_forward_test --gtest_filter='*V33*' > $OUT/gtest.log 2>&1; echo "fused rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gtest.log | tr '\n' ' ')"
grep -B2 -A6 "Failure" $OUT/gtest.log | head -20
el "sanitizers: hopper_v33, 3 CTAs"
BUILD=gpu-carry OUT=/tmp/san SAN_TIMEOUT=60 SANPATH="hopper_v33" LAB_ARGS="--persistent-ctas 3" scripts/fused_device.sh sanitize > $OUT/sanitize.txt 2>&1
echo "sanitizer lines: $(grep -c '^san_' $OUT/sanitize.txt), clean: $(grep -E '^san_' $OUT/sanitize.txt | grep -cE ' ok .*(ERROR SUMMARY: 0 errors|0 hazards displayed)')"
bench() {  # impls b h s d mask
  echo "== $1 b$2 h$3 s$4 d$5 $6 bf16"
  timeout 60 gpu-carry/attnprof bench --impl $1 --interleave --device cuda -b $2 --heads $3 --kv-heads $3 -s $4 --kv-seq $4 \
    -d $5 --dtype bf16 --layout bhsd --$6 --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror"
}
I=fused:hopper_v8,fused:hopper_v33,cudnn
el "A/B"
for a in "$I 8 16 2048 128 no-causal" "$I 2 16 4096 128 no-causal" "$I 32 16 512 128 no-causal" "$I 16 16 1024 128 no-causal" \
         "fused:hopper,$I 4 16 2048 64 no-causal" "$I 8 16 2048 128 causal" "$I 8 16 2048 128 no-causal" "$I 2 16 4096 128 no-causal"; do
  bench $a | tee -a $OUT/bench.txt
done
el "end"
