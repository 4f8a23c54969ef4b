#!/usr/bin/env bash
# Session 15, run 89: what moves the absolute rates between bench processes (run 88: up to 6%, fused and
# cuDNN together, unseen by nvidia-smi)? Five rounds of: the lab's per-tile timers of version 8 at B8 H16
# S2k D128 full (their records give the SM clock in the kernel: clock64 against globaltimer) and
# `attnprof bench` of version 8 and cuDNN on the same shape, each its own process.
# Expected: if it is the SM clock, the timers' clock moves between rounds (run 80 read 1.73-1.79 GHz) and
# the bench's rate with it; if the clock stays put while the rates move, it is memory or L2 state.
set -u
export LD_LIBRARY_PATH=$PWD/gpu-carry/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cudnn_lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
[ -n "$cudnn_lib" ] && export LD_LIBRARY_PATH=$cudnn_lib:$LD_LIBRARY_PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
for r in 1 2 3 4 5; do
  echo "== round $r"
  timeout 60 gpu-carry/attnprof_fused_lab --timers --path hopper_v8 --shape 8,16,16,2048,2048,128,0 2>&1 |
    grep -E "SM clock|grid span|per key block" | tee -a $OUT/timers.txt
  timeout 60 gpu-carry/attnprof bench --impl fused:hopper_v8,cudnn --interleave --device cuda -b 8 --heads 16 --kv-heads 16 \
    -s 2048 --kv-seq 2048 -d 128 --dtype bf16 --layout bhsd --no-causal --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror" |
    tee -a $OUT/bench.txt
done
