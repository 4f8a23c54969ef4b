#!/usr/bin/env bash
# Session 15, run 84: where version 35's time went. `attnprof record` (CUPTI, kernels and memsets) around
# `attnprof bench` of versions 8 and 35 at B8 H16 S2k and B4 H16 S4k D128 full, from run 83's build; the
# traces' kernel start and end times show whether the tail kernel's first CTAs ran beside version 8's
# and when both ended. Expected (side_tail_plan): the tail kernel starts within a few us of version 8,
# version 8 on 128 CTAs ends after 15 rounds (about 15/15.5 of version 8 alone on 132), the tail
# about 9 blocks (~13 us) later at S2k. Run 83 measured version 35 ~12 us slower than version 8 there.
set -u
export LD_LIBRARY_PATH=$PWD/gpu-carry/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
for shape in "8 16 2048" "4 16 4096"; do
  set -- $shape
  el "record b$1 h$2 s$3"
  timeout 120 gpu-carry/attnprof record --kinds kernel,memset -o $OUT/v35_b$1_s$3.json.gz -- \
    gpu-carry/attnprof bench --impl fused:hopper_v8,fused:hopper_v35 --interleave --device cuda -b $1 --heads $2 \
    --kv-heads $2 -s $3 --kv-seq $3 -d 128 --dtype bf16 --layout bhsd --no-causal --timing cold 2>&1 | grep -E "^fused|rror"
done
el "end"
