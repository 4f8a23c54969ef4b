#!/usr/bin/env bash
# Session 12, runs 68-70 (each on a freshly started H200): issue 13's grid on the three cases whose
# kernel changed this session (B2 H16 Sq8192/Skv512 D128 bottom-right: version 18 -> 26; B4 H16
# S2049 D128 causal: version 6 -> 18 by persistent_rounds_pay; B2 H16 S4097: version 6 -> 27); the
# other 47 run the SASS runs 59-61 measured. ONLY= picks the cases; CHECK=1 then runs the project's
# GPU check (scripts/gpu_check.sh: every GPU test, sanitizers, the study shape).
# Expected: Sq8192/Skv512 ~1.07 of cuDNN, S2049 ~1.01, S4097 ~1.03 (run 67: 1.033).
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
el "grid: the changed cases"
timeout 300 python3 scripts/fused_grid.py run gpu-carry/attnprof $OUT/grid --flash \
  --only ${ONLY:-b2h16s8192x512d128_causalbr,b4h16s2049d128,b2h16s4097d128} --deadline 200 > $OUT/grid.txt 2>&1
echo "grid rc=$?"; grep -E "^\| b" $OUT/grid.txt | head
if [ -n "${CHECK:-}" ]; then
  el "gpu_check"
  OUT=$OUT/gc scripts/gpu_check.sh gpu-carry > $OUT/gpu_check.txt 2>&1; echo "gpu_check rc=$?"
  grep -E "^== |rc=|PASSED|FAILED|ERROR SUMMARY|hazards|study|fused |cudnn " $OUT/gpu_check.txt | head -40
  rm -rf $OUT/gc/traces
fi
el "end"
