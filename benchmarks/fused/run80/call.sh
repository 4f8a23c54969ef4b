#!/usr/bin/env bash
# Session 14, run 80: the session's final build (every fused kernel SASS-identical to session 13's; the
# case list has one more case): per-tile timers of the default's kernels on the three full-attention
# shapes the grid fails at 1.03 (B8 H16 S2k D128 and B2 H16 S4k D128 on version 8, B4 H16 S2k D64 on
# version 11), then the project's GPU check (GPU tests, the study shape's tables and doctor, sanitizers
# on the default and the portable path). Expected: every check passes; at D=128 S2k a tile's fixed part
# (tile - main loop) ~1.5-2 us beside 16 key blocks of ~1.6 us (~7%), at S4k the same beside 32.
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
el "timers"
{
timeout 40 gpu-carry/attnprof_fused_lab --timers --path hopper_v8 --shape 8,16,16,2048,2048,128,0 --shape 2,16,16,4096,4096,128,0
timeout 40 gpu-carry/attnprof_fused_lab --timers --path hopper_v11 --shape 4,16,16,2048,2048,64,0
} 2>&1 | tee $OUT/timers.txt | grep -v "^device"
el "gpu_check"
SANPATH="hopper portable" OUT=$OUT/gc timeout 220 scripts/gpu_check.sh gpu-carry > $OUT/gpu_check.txt 2>&1; echo "gpu_check rc=$?"
grep -E "^== |rc=|PASSED|FAILED|ERROR SUMMARY|hazards|fused |cudnn " $OUT/gpu_check.txt | head -30
echo "sanitizer lines: $(grep -c '^san_' $OUT/gc/sanitizer.txt), clean: $(grep -E '^san_' $OUT/gc/sanitizer.txt | grep -cE ' ok .*(ERROR SUMMARY: 0 errors|0 hazards displayed)')"
rm -rf $OUT/gc/traces $OUT/gc/sanitizer
el "end"
