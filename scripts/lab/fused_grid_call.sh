#!/usr/bin/env bash
# One device call of issue 13's measurement, on a freshly started GPU machine: optionally the fused
# GTests, then `scripts/lab/fused_grid.py run gpu-carry/attnprof ... --flash`, everything packed into
# $OUT/run.tgz (the device tool brings back at most 8 files; keep it packed: `fused_grid.py
# summarize` reads the grid folder's .tgz). Here: `make gpu-pack`, then call the device with
# carry gpu-pack and `tar -xzf gpu-pack/gpu-carry.tgz && GTEST=1 scripts/lab/fused_grid_call.sh`;
# three such calls (give the machine back between them), then, here,
# `scripts/lab/fused_grid.py summarize RUN1/grid.tgz RUN2/grid.tgz RUN3/grid.tgz` after
# `tar -czf grid.tgz grid` in each unpacked run.tgz. A grid run takes 150-185 s on an H200.
#   GTEST=1 DEADLINE=480 scripts/lab/fused_grid_call.sh [BUILD=gpu-carry]
set -u
B=${1:-gpu-carry}
FINAL=${OUT:?set OUT, the folder whose files come back}
OUT=$(mktemp -d)
trap 'tar -czf "$FINAL/run.tgz" -C "$OUT" .' EXIT
export LD_LIBRARY_PATH=$PWD/$B/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader || { echo "no GPU here"; exit 1; }
# PyTorch's cuDNN first, so `cudnn` runs the version PyTorch's cudnn backend runs.
cudnn_lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
[ -n "$cudnn_lib" ] && export LD_LIBRARY_PATH=$cudnn_lib:$LD_LIBRARY_PATH
if [ -n "${GTEST:-}" ]; then
  timeout 200 "$B/tests/fused/fused_forward_test" > "$OUT/gtest.log" 2>&1
  echo "fused_forward_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/gtest.log" | tr '\n' ' ')"
  grep -E "Failure|^\[  FAILED" "$OUT/gtest.log" | head
fi
T0=$(date +%s)
timeout $(( ${DEADLINE:-480} + 80 )) python3 scripts/lab/fused_grid.py run "$B/attnprof" "$OUT/grid" --flash \
  --deadline "${DEADLINE:-480}" > "$OUT/grid.txt" 2>&1
rc=$?
echo "grid rc=$rc in $(( $(date +%s) - T0 )) s"
grep -E "^(PASS|FAIL)|deadline" "$OUT/grid.txt"
exit $rc
