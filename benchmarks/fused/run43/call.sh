#!/usr/bin/env bash
# Dev call L (session 9): version 13 with the static rounds and the split tail in two loops (the
# static copy compiled as version 8/11's), the split rule at a 6-block saving (lab): unsplit
# codegen checks and splits against the parents and cuDNN; checks and sanitizers.
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
el "fused_forward_test V8/V11/V13"
timeout 150 gpu-carry/tests/fused/fused_forward_test --gtest_filter='*V8*:*V11*:*V13*:*HopperPath*' > $OUT/gtest.log 2>&1; echo "fused rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gtest.log | tr '\n' ' ')"
grep -B2 -A6 "Failure" $OUT/gtest.log | head -20
bench() {  # b h s d dtype impls
  echo "== b$1 h$2 s$3 d$4 full $5"
  timeout 120 gpu-carry/attnprof bench --impl "$6" --interleave --device cuda -b $1 --heads $2 --kv-heads $2 -s $3 --kv-seq $3 \
    -d $4 --dtype $5 --layout bhsd --no-causal --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror"
}
P8=fused:hopper_v8,fused:hopper_v13,cudnn
P11=fused:hopper_v11,fused:hopper_v13,cudnn
el "unsplit (no remainder, or D64 without scratch): parent vs v13"
{
bench 33 4 4096 128 bf16 $P8
bench 33 4 8192 128 bf16 $P11
bench 16 16 1024 128 bf16 $P8
bench 4 16 2048 64 bf16 $P11
bench 16 32 1024 64 bf16 $P11
} > $OUT/unsplit.txt 2>&1; cat $OUT/unsplit.txt
el "split"
{
bench 8 16 2048 128 bf16 $P8
bench 8 16 2048 128 fp16 $P8
bench 2 16 4096 128 bf16 $P8
bench 2 16 4096 128 fp16 $P8
bench 4 16 4096 128 bf16 $P8
bench 2 16 8192 128 bf16 $P11
bench 1 16 16384 128 bf16 $P11
} > $OUT/split.txt 2>&1; cat $OUT/split.txt
el "sanitizers: hopper_v13 forced splits (3 CTAs, ranges of 1) x small cases x memcheck, racecheck"
BUILD=gpu-carry OUT=$OUT/san LAB_ARGS="--persistent-ctas 3 --split-tail 1" SAN_TIMEOUT=100 SANPATH="hopper_v13" scripts/fused_device.sh sanitize > $OUT/sanitize.txt 2>&1
rm -rf $OUT/san
echo "sanitizer lines: $(grep -c '^san_' $OUT/sanitize.txt), clean: $(grep -E '^san_' $OUT/sanitize.txt | grep -cE ' ok .*(ERROR SUMMARY: 0 errors|0 hazards displayed)')"
grep -E '^san_' $OUT/sanitize.txt | grep -vE ' ok .*(ERROR SUMMARY: 0 errors|0 hazards displayed)' | head
el "end"
