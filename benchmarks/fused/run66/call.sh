#!/usr/bin/env bash
# Session 12, run 66 (a fresh H200): the whole fused_forward_test; issue 13's grid on the two cases
# whose kernel changed this session (B2 H16 Sq8192/Skv512 D128 bottom-right: version 18 -> 26;
# B4 H16 S2049 D128 causal: version 6 -> 18 by persistent_rounds_pay; the other 48 run the SASS
# runs 59-61 measured); then full attention at partial-round fills, the persistent grid (version 8
# at D=128, 11 at 64) against version 6, twice: does run 65's causal edge hold for full attention?
# Expected: Sq8192/Skv512 fused/cuDNN ~1.06 (runs 59-61: 1.017), S2049 ~1.01-1.02 (0.994).
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
el "grid: the two changed cases"
timeout 300 python3 scripts/fused_grid.py run gpu-carry/attnprof $OUT/grid --flash --only ${ONLY:-b2h16s8192x512d128_causalbr,b4h16s2049d128} --deadline 200 > $OUT/grid.txt 2>&1
echo "grid rc=$?"; grep -E "^(PASS|FAIL)|deadline|b2h16s8192x512d128_causalbr|b4h16s2049" $OUT/grid.txt | head
if [ -n "${GTEST:-}" ]; then
el "fused_forward_test"
timeout 200 gpu-carry/tests/fused/fused_forward_test > $OUT/gtest.log 2>&1; echo "fused rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gtest.log | tr '\n' ' ')"
grep -B2 -A6 "Failure" $OUT/gtest.log | head -20
fi
[ -n "${NOAB:-}" ] && { el "end"; exit 0; }
bench() {  # impls b h s d
  echo "== $1 b$2 h$3 s$4 d$5 full bf16"
  timeout 120 gpu-carry/attnprof bench --impl $1 --interleave --device cuda -b $2 --heads $3 --kv-heads $3 -s $4 --kv-seq $4 \
    -d $5 --dtype bf16 --layout bhsd --no-causal --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror"
}
el "A/B: full attention at partial-round fills"
{
for rep in 1 2; do
for s in "5 16 512" "11 16 512" "7 12 1024" "3 12 1024" "1 12 1024"; do
  bench fused:hopper_v8,fused:hopper_v6,cudnn $s 128
done
for s in "5 16 512" "7 12 1024" "3 12 1024"; do
  bench fused:hopper_v11,fused:hopper_v6,cudnn $s 64
done
done
} > $OUT/bench.txt 2>&1; cat $OUT/bench.txt
el "end"
