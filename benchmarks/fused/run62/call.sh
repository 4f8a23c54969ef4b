#!/usr/bin/env bash
# Session 11, run 62 (the session's final build): the interleaved timer with the order turning each
# round, checked on identical kernels (the default against version 18 at D=128 causal and version
# 11 at D=64, where they are the same kernel: expect 1.00 within ~0.3%), fused against cuDNN on four
# of the grid's S >= 2k cases, then the project's GPU check (scripts/gpu_check.sh).
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
bench() {  # impls b h hkv s d --causal|--no-causal
  echo "== $1 b$2 h$3 kv$4 s$5 d$6 $7 bf16"
  timeout 120 gpu-carry/attnprof bench --impl $1 --interleave --device cuda -b $2 --heads $3 --kv-heads $4 -s $5 --kv-seq $5 \
    -d $6 --dtype bf16 --layout bhsd $7 --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror"
}
el "identical kernels, order turning"
{
bench fused:hopper,fused:hopper_v18,cudnn 32 16 16 512 128 --causal
bench fused:hopper,fused:hopper_v18,cudnn 8 16 16 2048 128 --causal
bench fused:hopper,fused:hopper_v11,cudnn 8 32 32 2048 64 --causal
bench fused:hopper,fused:hopper_v11,cudnn 4 16 16 2048 64 --no-causal
bench fused,cudnn 8 16 16 2048 128 --no-causal
bench fused,cudnn 2 16 16 4096 128 --no-causal
bench fused,cudnn 4 32 32 4096 64 --causal
bench fused,cudnn 4 16 16 2048 64 --no-causal
} > $OUT/bench.txt 2>&1; cat $OUT/bench.txt
el "gpu_check"
OUT=$OUT/gc scripts/gpu_check.sh gpu-carry > $OUT/gpu_check.txt 2>&1; echo "gpu_check rc=$?"
grep -E "^== |rc=|PASSED|FAILED|ERROR SUMMARY|hazards|study|fused |cudnn " $OUT/gpu_check.txt | head -40
rm -rf $OUT/gc/traces
el "end"
