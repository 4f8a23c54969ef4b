#!/usr/bin/env bash
# Session 11, run 58: version 24 (version 11 at D=64 with the row sums from the tensor cores: P V
# as m64n72, the last 8 columns of B a block of ones, so the softmax has no adds per score) against
# the default and cuDNN: fused_forward_test, sanitizers on hopper_v24 (grid capped at 3 CTAs), then
# interleaved A/B on D=64 shapes, full and causal, twice.
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
timeout 200 gpu-carry/tests/fused/fused_forward_test --gtest_filter='*V24*:*HopperPath*:*V11*' > $OUT/gtest.log 2>&1; echo "fused rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gtest.log | tr '\n' ' ')"
grep -B2 -A6 "Failure" $OUT/gtest.log | head -20
el "sanitizers: hopper_v24, grid capped at 3"
BUILD=gpu-carry OUT=$OUT/san LAB_ARGS="--persistent-ctas 3" SAN_TIMEOUT=100 SANPATH="hopper_v24" scripts/fused_device.sh sanitize > $OUT/sanitize.txt 2>&1
rm -rf $OUT/san
echo "sanitizer lines: $(grep -c '^san_' $OUT/sanitize.txt), clean: $(grep -E '^san_' $OUT/sanitize.txt | grep -cE ' ok .*(ERROR SUMMARY: 0 errors|0 hazards displayed)')"
bench() {  # b h hkv s d layout --causal|--no-causal [dtype]
  echo "== b$1 h$2 kv$3 s$4 d$5 $6 $7 ${8:-bf16}"
  timeout 120 gpu-carry/attnprof bench --impl fused:hopper,fused:hopper_v11,fused:hopper_v24,cudnn --interleave --device cuda -b $1 --heads $2 --kv-heads $3 -s $4 --kv-seq $4 \
    -d $5 --dtype ${8:-bf16} --layout $6 $7 --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror"
}
el "A/B"
{
for rep in 1 2; do
bench 4 16 16 2048 64 bhsd --no-causal
bench 8 32 32 2048 64 bhsd --no-causal
bench 16 12 12 768 64 bhsd --no-causal
bench 4 32 32 4096 64 bhsd --no-causal
bench 32 32 32 512 64 bhsd --no-causal
bench 32 32 32 512 64 bhsd --causal
bench 16 32 32 1024 64 bhsd --causal
bench 8 16 16 1024 64 bhsd --causal
bench 8 32 32 2048 64 bhsd --causal
bench 4 16 16 2048 64 bhsd --causal
bench 4 32 32 4096 64 bhsd --causal
bench 4 16 16 2048 64 bhsd --no-causal fp16
done
} > $OUT/bench.txt 2>&1; cat $OUT/bench.txt
el "end"
