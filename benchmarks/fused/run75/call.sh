#!/usr/bin/env bash
# Session 13, run 75: the final build's checks. The Python package's GPU check (the cp312 wheel in
# gpu-pack/dist: attnprof.attention on a Hugging Face model, against SDPA in fp64, under torch.compile;
# its causal calls now take version 29 with the counter in PyTorch-allocated workspace); the project's
# GPU check (every GPU test, the study shape's tables and doctor, sanitizers on the default and the
# portable path); an A/B of the default (version 29) against version 18 / 11 on two shapes where the
# grid showed no gain; the lab's hot timing of version 29 with L2 sections of 32 MiB, 8 and 4 heads.
# Expected: every check passes; the A/B within +-3%; the section sizes within +-2% of each other.
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
el "python GPU check"
timeout 240 scripts/python_gpu_check.sh gpu-pack/dist > $OUT/python_gpu.txt 2>&1; echo "python rc=$?"; tail -25 $OUT/python_gpu.txt
bench() {  # impls b h s d
  echo "== $1 b$2 h$3 s$4 d$5 causal bf16"
  timeout 120 gpu-carry/attnprof bench --impl $1 --interleave --device cuda -b $2 --heads $3 --kv-heads $3 -s $4 --kv-seq $4 \
    -d $5 --dtype bf16 --layout bhsd --causal --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror"
}
el "A/B"
{
bench fused:hopper,fused:hopper_v18,cudnn 2 16 4096 128
bench fused:hopper,fused:hopper_v11,cudnn 4 16 2048 64
} > $OUT/bench.txt 2>&1; cat $OUT/bench.txt
el "lab: sections"
for sh in 0 8 4; do
  timeout 60 gpu-carry/attnprof_fused_lab --time --quick --section-heads $sh --path hopper_v29 2>&1 | grep causal | sed "s/^/sections=$sh /"
done > $OUT/sections.txt; timeout 60 gpu-carry/attnprof_fused_lab --time --quick --path hopper_v18 2>&1 | grep causal >> $OUT/sections.txt
cat $OUT/sections.txt
el "gpu_check"
SANPATH="hopper portable" OUT=$OUT/gc timeout 200 scripts/gpu_check.sh gpu-carry > $OUT/gpu_check.txt 2>&1; echo "gpu_check rc=$?"
grep -E "^== |rc=|PASSED|FAILED|ERROR SUMMARY|hazards|fused |cudnn " $OUT/gpu_check.txt | head -30
echo "sanitizer lines: $(grep -c '^san_' $OUT/gc/sanitizer.txt), clean: $(grep -E '^san_' $OUT/gc/sanitizer.txt | grep -cE ' ok .*(ERROR SUMMARY: 0 errors|0 hazards displayed)')"
sed -n '/=== attnprof doctor on the fused trace/,/^===/p' $OUT/gpu_check.txt | head -30
rm -rf $OUT/gc/traces $OUT/gc/sanitizer
el "end"
