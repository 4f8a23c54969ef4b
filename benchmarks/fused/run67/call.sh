#!/usr/bin/env bash
# Session 12, run 67: version 27 (version 6 with a warpgroup whose rows all lie past q_len leaving at
# once: the last row of tiles when q_len % 128 is 1..64; its turns skipped by a branch) and lab
# version 28 (the same, the turns' named barriers counting the active warpgroups' threads) against
# version 6 and cuDNN: fused_forward_test, sanitizers (grid uncapped: one CTA per tile), then A/B
# twice. Expected: S4097 (the last tile: 1 row, 33 blocks) +1.5-2.5% over version 6; S4096 (no
# such tile: the loops' reordering alone) within +-1%.
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
timeout 200 gpu-carry/tests/fused/fused_forward_test --gtest_filter='*V27*:*V28*:*HopperPath*:*V6*' > $OUT/gtest.log 2>&1; echo "fused rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gtest.log | tr '\n' ' ')"
grep -B2 -A6 "Failure" $OUT/gtest.log | head -20
el "sanitizers: hopper_v27 hopper_v28"
BUILD=gpu-carry OUT=$OUT/san SAN_TIMEOUT=100 SANPATH="hopper_v27 hopper_v28" scripts/fused_device.sh sanitize > $OUT/sanitize.txt 2>&1
rm -rf $OUT/san
echo "sanitizer lines: $(grep -c '^san_' $OUT/sanitize.txt), clean: $(grep -E '^san_' $OUT/sanitize.txt | grep -cE ' ok .*(ERROR SUMMARY: 0 errors|0 hazards displayed)')"
bench() {  # impls b h s d causal
  echo "== $1 b$2 h$3 s$4 d$5 $6 bf16"
  timeout 120 gpu-carry/attnprof bench --impl $1 --interleave --device cuda -b $2 --heads $3 --kv-heads $3 -s $4 --kv-seq $4 \
    -d $5 --dtype bf16 --layout bhsd $6 --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror"
}
el "A/B"
{
for rep in 1 2; do
bench fused:hopper_v27,fused:hopper_v28,fused:hopper_v6,cudnn 2 16 4097 128 --causal
bench fused:hopper_v27,fused:hopper_v28,fused:hopper_v6,cudnn 2 16 4096 128 --causal
bench fused:hopper_v27,fused:hopper_v28,fused:hopper_v6,fused:hopper,cudnn 4 16 2049 128 --causal
bench fused:hopper_v27,fused:hopper_v28,fused:hopper_v6,cudnn 8 16 1025 64 --causal
bench fused:hopper_v27,fused:hopper_v28,fused:hopper_v6,cudnn 1 16 16385 128 --causal
done
} > $OUT/bench.txt 2>&1; cat $OUT/bench.txt
el "end"
