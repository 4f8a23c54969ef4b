#!/usr/bin/env bash
# Session 12, run 65: the rounds rule's edge. persistent_rounds_full sends causal calls whose static
# rounds are under 90% full to version 6 (one CTA per tile); 90% was a guard, not a measured edge
# (run 48 measured version 8 against 6 at 87% and 82%, before version 18 existed). Version 18 (D=128)
# and 11 (D=64) against version 6 and cuDNN at fills of 79-91%, twice. Expected: the persistent
# kernel within +-3% of version 6, better at the higher fills (S2049: run 48's v8 was +0.8%, v18
# has +0.5-2% over v8 from S1k).
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
bench() {  # impls b h s d
  echo "== $1 b$2 h$3 s$4 d$5 causal bf16"
  timeout 120 gpu-carry/attnprof bench --impl $1 --interleave --device cuda -b $2 --heads $3 --kv-heads $3 -s $4 --kv-seq $4 \
    -d $5 --dtype bf16 --layout bhsd --causal --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror"
}
el "A/B"
{
for rep in 1 2; do
for s in "13 16 512" "5 16 1024" "2 16 4097" "7 16 1024" "4 16 2049" "9 16 1024" "11 16 1024" "5 12 2048"; do
  bench fused:hopper_v18,fused:hopper_v6,cudnn $s 128
done
for s in "13 16 512" "7 16 1024" "9 16 1024"; do
  bench fused:hopper_v11,fused:hopper_v6,cudnn $s 64
done
done
} > $OUT/bench.txt 2>&1; cat $OUT/bench.txt
el "end"
