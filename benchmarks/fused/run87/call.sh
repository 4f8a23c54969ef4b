#!/usr/bin/env bash
# Session 15, run 87: version 42, version 8 whose warpgroups hand over the ping-pong turn after issuing
# S(n) and before P(n-1) V(n-1): the tensor pipe takes S0, S1, PV0, PV1 instead of S0, PV0, S1, PV1, so each
# warpgroup's S (which its softmax waits for) is done a P V earlier, and its P V (which only the rescale
# after the softmax waits for) a S later. Its main loop keeps 0.993 of version 8's ops in order. A/B of
# versions 8 and 42 and cuDNN, then fused_forward_test and the sanitizers (3 CTAs).
# Expected: run 85 showed the turn's start matters (the V wait before it cost 2%); the softmax of one
# warpgroup starting earlier could gain ~1%, or the other's later P V could stall its rescale: -1% to +2%.
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
I=fused:hopper_v8,fused:hopper_v42,cudnn
el "A/B"
for a in "$I 8 16 2048 128 bf16" "$I 2 16 4096 128 bf16" "$I 2 16 4096 128 fp16" "$I 8 16 2048 128 fp16" \
         "$I 32 16 512 128 bf16" "$I 16 16 1024 128 bf16" "$I 4 16 4096 128 bf16" "$I 8 16 2048 128 bf16" "$I 2 16 4096 128 bf16"; do
  bench $a | tee -a $OUT/bench.txt
done
el "fused_forward_test (v42)"
timeout 150 gpu-carry/tests/fused/fused_forward_test --gtest_filter='*V42*' > $OUT/gtest.log 2>&1; echo "fused rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gtest.log | tr '\n' ' ')"
grep -B2 -A6 "Failure" $OUT/gtest.log | head -20
el "sanitizers: hopper_v42, 3 CTAs"
BUILD=gpu-carry OUT=/tmp/san SAN_TIMEOUT=60 SANPATH="hopper_v42" LAB_ARGS="--persistent-ctas 3" scripts/fused_device.sh sanitize > $OUT/sanitize.txt 2>&1
echo "sanitizer lines: $(grep -c '^san_' $OUT/sanitize.txt), clean: $(grep -E '^san_' $OUT/sanitize.txt | grep -cE 'ERROR SUMMARY: 0 errors|0 hazards displayed')"
el "end"
