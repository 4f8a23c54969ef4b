#!/usr/bin/env bash
# Session 15, run 83: version 35, full attention's last round split along the keys in a kernel beside
# version 8: version 8 (SASS as the default's) on the first heads in exact rounds on 128 CTAs, version 13's
# kernel on the rest on a second stream, its first 4 CTAs on the free SMs from the start and the others
# as version 8's CTAs leave. fused_forward_test (v35 uncapped and on 3 CTAs, forced splits), memcheck and
# racecheck on the check list's two version 35 cases (3 CTAs, forced splits), then an A/B of versions 8,
# 13, 35, the default and cuDNN, each result printed as it comes.
# Expected (side_tail_plan): B8 H16 S2k and B2 H16 S4k D128 full end at 249 key blocks instead of 256,
# less a piece's start-up and the partials (~3-4 blocks): +1-1.5% over version 8 (bf16 and fp16);
# B4 H16 S4k 497 instead of 512: +2-2.5% over version 8, +1% over version 13 (its loop ran 1% slower).
# If the tail kernel's CTAs do not start on the 4 free SMs while version 8 runs, version 35 loses ~1.5%
# (version 8's rounds on 128 CTAs, then the tail).
set -u
export LD_LIBRARY_PATH=$PWD/gpu-carry/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cudnn_lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
[ -n "$cudnn_lib" ] && export LD_LIBRARY_PATH=$cudnn_lib:$LD_LIBRARY_PATH
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
el "fused_forward_test (v35, v13, v8, hopper)"
timeout 120 gpu-carry/tests/fused/fused_forward_test --gtest_filter='*V35*:*V13*:*HopperV8*:*HopperPath*' > $OUT/gtest.log 2>&1; echo "fused rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gtest.log | tr '\n' ' ')"
grep -B2 -A6 "Failure" $OUT/gtest.log | head -20
el "sanitizers: hopper_v35, 3 CTAs, forced splits, cases 35 and 36"
BUILD=gpu-carry OUT=/tmp/san SAN_TIMEOUT=90 SAN_CASES="35 36" SANPATH="hopper_v35" LAB_ARGS="--persistent-ctas 3 --split-tail 1" \
  scripts/fused_device.sh sanitize > $OUT/sanitize.txt 2>&1
grep -E "^san_" $OUT/sanitize.txt
bench() {  # impls b h s d dtype
  echo "== $1 b$2 h$3 s$4 d$5 full $6"
  timeout 60 gpu-carry/attnprof bench --impl $1 --interleave --device cuda -b $2 --heads $3 --kv-heads $3 -s $4 --kv-seq $4 \
    -d $5 --dtype $6 --layout bhsd --no-causal --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror"
}
I=fused:hopper_v8,fused:hopper_v35,fused,cudnn
el "A/B"
for a in "$I 8 16 2048 128 bf16" "$I 2 16 4096 128 bf16" "fused:hopper_v13,$I 4 16 4096 128 bf16" "$I 2 16 4096 128 fp16" \
         "$I 8 16 2048 128 fp16" "$I 8 16 2048 128 bf16" "$I 2 16 4096 128 bf16"; do
  bench $a | tee -a $OUT/bench.txt
done
el "end"
