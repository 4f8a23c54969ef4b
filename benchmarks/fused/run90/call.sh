#!/usr/bin/env bash
# Session 15, run 90: the final build's default on the causal calls it sends to version 29's rows. b8b26fb
# (session 14's review) made launch_hopper call those rows straight after its own takes_dynamic check
# instead of through launch_hopper_v29; no GPU run had timed that route since. fused_forward_test (every
# test), then the default (`fused`) against `fused:hopper_v29` and cuDNN on causal shapes where use_dynamic
# picks version 29 (D128 from S2k, D64 S512-S8k), and one where it does not (D128 S1k: version 18).
# Expected: all tests pass; `fused` and `fused:hopper_v29` within noise of each other (the same kernel)
# and their fp64 errors equal, where the rule picks it; at S1k D128 the default runs version 18.
set -u
export LD_LIBRARY_PATH=$PWD/gpu-carry/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cudnn_lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
[ -n "$cudnn_lib" ] && export LD_LIBRARY_PATH=$cudnn_lib:$LD_LIBRARY_PATH
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
el "fused_forward_test (all)"
timeout 200 gpu-carry/tests/fused/fused_forward_test > $OUT/gtest.log 2>&1; echo "fused rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gtest.log | tr '\n' ' ')"
grep -B2 -A6 "Failure" $OUT/gtest.log | head -20
el "A/B, causal"
for a in "8 16 2048 128" "2 16 8192 128" "16 32 1024 64" "4 32 4096 64" "16 16 1024 128"; do
  set -- $a
  echo "== b$1 h$2 s$3 d$4 causal bf16" | tee -a $OUT/bench.txt
  timeout 60 gpu-carry/attnprof bench --impl fused,fused:hopper_v29,cudnn --interleave --device cuda -b $1 --heads $2 \
    --kv-heads $2 -s $3 --kv-seq $3 -d $4 --dtype bf16 --layout bhsd --causal --timing cold 2>&1 |
    grep -E "^(fused|cudnn)|rror" | tee -a $OUT/bench.txt
done
el "end"
