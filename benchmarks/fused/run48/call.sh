#!/usr/bin/env bash
# Dev call N (session 9, run 48): the odd-length causal shapes whose persistent rounds are 82-87%
# full (the rounds rule sends them to version 6): version 6 against version 8 and cuDNN.
set -u
FINAL=$OUT
OUT=$(mktemp -d)
trap 'tar -czf "$FINAL/run.tgz" -C "$OUT" .' EXIT
export LD_LIBRARY_PATH=$PWD/gpu-carry/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cudnn_lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
[ -n "$cudnn_lib" ] && export LD_LIBRARY_PATH=$cudnn_lib:$LD_LIBRARY_PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
bench() {  # b h s d
  echo "== b$1 h$2 s$3 d$4 causal bf16"
  timeout 120 gpu-carry/attnprof bench --impl fused:hopper,fused:hopper_v6,fused:hopper_v8,cudnn --interleave --device cuda \
    -b $1 --heads $2 --kv-heads $2 -s $3 --kv-seq $3 -d $4 --dtype bf16 --layout bhsd --causal --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror"
}
{
bench 4 16 2049 128
bench 2 16 4097 128
bench 4 16 2049 128
bench 2 16 4097 128
bench 8 16 1000 128
} > $OUT/bench.txt 2>&1; cat $OUT/bench.txt
