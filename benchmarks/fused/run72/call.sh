#!/usr/bin/env bash
# Session 13, run 72: version 29 in the default (use_dynamic), its sections now even and its slot read
# by lane 0 only. fused_forward_test (all), sanitizers on hopper_v29 (3 CTAs), an A/B of the default
# against the kernels it ran before on the cases whose kernel changed kind (S2049: version 18; S4097:
# 27; GQA S32k and D128 S16k: 6; bottom-right Sq512/Skv8192: 18), then issue 13's grid (run 1 of 3).
# Expected: racecheck clean (run 71: 3 hazards on two cases, the other lanes' slot reads); S2049 and
# S4097 +5-15% over their old kernels (sections of 22/22/20 and 11/11/10 heads instead of a last
# section of 2); the grid's D64 causal S2k/S4k at 1.03-1.05, B32 H32 S512 D64 causal ~0.98.
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
el "sanitizers: hopper_v29 and hopper, 3 CTAs"
BUILD=gpu-carry OUT=$OUT/san SAN_TIMEOUT=100 SANPATH="hopper_v29 hopper" LAB_ARGS="--persistent-ctas 3" scripts/fused_device.sh sanitize > $OUT/sanitize.txt 2>&1
rm -rf $OUT/san
echo "sanitizer lines: $(grep -c '^san_' $OUT/sanitize.txt), clean: $(grep -E '^san_' $OUT/sanitize.txt | grep -cE ' ok .*(ERROR SUMMARY: 0 errors|0 hazards displayed)')"
bench() {  # impls b h hkv s skv d layout extra
  echo "== $1 b$2 h$3 kv$4 s$5 skv$6 d$7 $8 ${9:-} causal bf16"
  timeout 120 gpu-carry/attnprof bench --impl $1 --interleave --device cuda -b $2 --heads $3 --kv-heads $4 -s $5 --kv-seq $6 \
    -d $7 --dtype bf16 --layout $8 --causal ${9:-} --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror"
}
el "A/B"
{
bench fused:hopper,fused:hopper_v18,cudnn 4 16 16 2049 2049 128 bhsd
bench fused:hopper,fused:hopper_v27,cudnn 2 16 16 4097 4097 128 bhsd
bench fused:hopper,fused:hopper_v6,cudnn 1 32 8 32768 32768 128 bshd
bench fused:hopper,fused:hopper_v18,cudnn 2 16 16 512 8192 128 bhsd --bottom-right
bench fused:hopper,fused:hopper_v11,cudnn 8 32 32 2048 2048 64 bhsd
} > $OUT/bench.txt 2>&1; cat $OUT/bench.txt
el "grid"
timeout 400 python3 scripts/fused_grid.py run gpu-carry/attnprof $OUT/grid --flash --deadline 320 > $OUT/grid.txt 2>&1
echo "grid rc=$?"; grep -E "^(PASS|FAIL)|deadline" $OUT/grid.txt
el "end"
