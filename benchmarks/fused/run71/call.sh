#!/usr/bin/env bash
# Session 13, run 71: version 29 (version 18, 11 at D=64, with a dynamic causal tile scheduler:
# single tiles drawn longest first from an atomic counter, in L2 sections of (batch, head)s) against
# the default (hopper) and cuDNN: fused_forward_test, sanitizers (grid capped at 3 CTAs), then A/B
# twice on the causal grid cases. Expected: +1.5-3% on the 2048-item shapes (the static last round's
# idle share, less the counter's memset and atomics), +8-15% at S2049 (576 uneven static items), within
# +-3% of version 6 where the default runs one CTA per tile (D64 S8k, D128 S16k).
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
timeout 200 gpu-carry/tests/fused/fused_forward_test --gtest_filter='*V29*:*HopperPath*:*V18*' > $OUT/gtest.log 2>&1; echo "fused rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gtest.log | tr '\n' ' ')"
grep -B2 -A6 "Failure" $OUT/gtest.log | head -20
el "sanitizers: hopper_v29, 3 CTAs"
BUILD=gpu-carry OUT=$OUT/san SAN_TIMEOUT=100 SANPATH="hopper_v29" LAB_ARGS="--persistent-ctas 3" scripts/fused_device.sh sanitize > $OUT/sanitize.txt 2>&1
rm -rf $OUT/san
echo "sanitizer lines: $(grep -c '^san_' $OUT/sanitize.txt), clean: $(grep -E '^san_' $OUT/sanitize.txt | grep -cE ' ok .*(ERROR SUMMARY: 0 errors|0 hazards displayed)')"
bench() {  # impls b h hkv s d layout
  echo "== b$1 h$2 kv$3 s$4 d$5 $6 causal bf16"
  timeout 120 gpu-carry/attnprof bench --impl fused:hopper,fused:hopper_v29,cudnn --interleave --device cuda -b $1 --heads $2 --kv-heads $3 -s $4 --kv-seq $4 \
    -d $5 --dtype bf16 --layout $6 --causal --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror"
}
el "A/B"
{
for rep in 1 2; do
bench 8 32 32 2048 64 bhsd
bench 4 32 32 4096 64 bhsd
bench 4 16 16 2049 128 bhsd
bench 32 32 32 512 64 bhsd
bench 16 32 32 1024 64 bhsd
bench 8 16 16 2048 128 bhsd
bench 128 32 32 256 128 bhsd
bench 8 32 8 2048 128 bshd
bench 2 32 32 8192 64 bhsd
bench 1 16 16 16384 128 bhsd
bench 2 16 16 4097 128 bhsd
done
} > $OUT/bench.txt 2>&1; cat $OUT/bench.txt
el "end"
