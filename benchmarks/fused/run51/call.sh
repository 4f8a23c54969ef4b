#!/usr/bin/env bash
# Session 10, run 51: versions 15-18 (a warpgroup's last P V, or its S, softmax and P V, cut to the
# half its rows see; 17 and 18 with the warpgroups' rows swapped in a causal pair's second tile):
# fused_forward_test, sanitizers on 17 and 18 (grid capped at 3), then hopper (the default) against
# all four and cuDNN, interleaved, on causal shapes (twice; S2049/S4097 dropped: v6 vs v8 there).
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
el "fused_forward_test"
timeout 200 gpu-carry/tests/fused/fused_forward_test > $OUT/gtest.log 2>&1; echo "fused rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gtest.log | tr '\n' ' ')"
grep -B2 -A6 "Failure" $OUT/gtest.log | head -20
el "sanitizers: hopper_v17 and v18, grid capped at 3"
BUILD=gpu-carry OUT=$OUT/san LAB_ARGS="--persistent-ctas 3" SAN_TIMEOUT=100 SANPATH="hopper_v17 hopper_v18" scripts/fused_device.sh sanitize > $OUT/sanitize.txt 2>&1
rm -rf $OUT/san
echo "sanitizer lines: $(grep -c '^san_' $OUT/sanitize.txt), clean: $(grep -E '^san_' $OUT/sanitize.txt | grep -cE ' ok .*(ERROR SUMMARY: 0 errors|0 hazards displayed)')"
bench() {  # b h hkv s d layout
  echo "== b$1 h$2 kv$3 s$4 d$5 $6 causal bf16"
  timeout 120 gpu-carry/attnprof bench --impl fused:hopper,fused:hopper_v15,fused:hopper_v16,fused:hopper_v17,fused:hopper_v18,cudnn --interleave --device cuda -b $1 --heads $2 --kv-heads $3 -s $4 --kv-seq $4 \
    -d $5 --dtype bf16 --layout $6 --causal --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror"
}
el "A/B"
{
for rep in 1 2; do
bench 128 32 32 256 128 bhsd
bench 32 32 32 512 64 bhsd
bench 16 32 32 1024 64 bhsd
bench 8 32 32 2048 64 bhsd
bench 4 32 32 4096 64 bhsd
bench 4 16 16 2048 64 bhsd
bench 32 16 16 512 128 bhsd
bench 16 16 16 1024 128 bhsd
bench 8 16 16 2048 128 bhsd
bench 4 16 16 4096 128 bhsd
bench 8 32 8 2048 128 bshd
done
} > $OUT/bench.txt 2>&1; cat $OUT/bench.txt
el "end"
