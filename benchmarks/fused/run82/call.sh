#!/usr/bin/env bash
# Session 15, run 82: version 34, version 13 on version 8's rows with the consumers' mask test on the
# piece's own key blocks (key lengths a multiple of 128 only, where no block needs a mask), splitting the
# tail from 4 blocks saved instead of 12. fused_forward_test (v34, v13), then version 8, 13, 34 and cuDNN
# interleaved, each result printed as it comes.
# Expected: the SASS says version 34's main loop is no closer to version 8's than version 13's (0.875 of
# its ops in order, both; 735 and 736 instructions to 733), so version 34 unsplit runs as version 13
# unsplit (run 41: 0.988-0.993 of version 8), and split where it saves 7 blocks (B8 H16 S2k, B2 H16 S4k)
# about as run 31's version 13 did at S2k: 0.996 of version 8. A gain over version 8 there (the 1%
# that would lift those shapes past 1.03 of cuDNN) would mean the per-tile code, not the mask, was
# the loop's cost.
set -u
export LD_LIBRARY_PATH=$PWD/gpu-carry/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cudnn_lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
[ -n "$cudnn_lib" ] && export LD_LIBRARY_PATH=$cudnn_lib:$LD_LIBRARY_PATH
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
el "fused_forward_test (v34, v13)"
timeout 90 gpu-carry/tests/fused/fused_forward_test --gtest_filter='*V34*:*V13*:*HopperPath*' > $OUT/gtest.log 2>&1; echo "fused rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gtest.log | tr '\n' ' ')"
grep -B2 -A6 "Failure" $OUT/gtest.log | head -20
bench() {  # impls b h s d dtype
  echo "== $1 b$2 h$3 s$4 d$5 full $6"
  timeout 60 gpu-carry/attnprof bench --impl $1 --interleave --device cuda -b $2 --heads $3 --kv-heads $3 -s $4 --kv-seq $4 \
    -d $5 --dtype $6 --layout bhsd --no-causal --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror"
}
I=fused:hopper_v8,fused:hopper_v13,fused:hopper_v34,cudnn
el "A/B"
for a in "$I 8 16 2048 128 bf16" "$I 2 16 4096 128 bf16" "$I 2 16 4096 128 fp16" "$I 8 16 2048 128 fp16" \
         "$I 4 16 4096 128 bf16" "$I 33 4 4096 128 bf16" "$I 8 16 2048 128 bf16" "$I 2 16 4096 128 bf16"; do
  bench $a | tee -a $OUT/bench.txt
done
el "end"
