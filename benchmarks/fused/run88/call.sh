#!/usr/bin/env bash
# Session 15, run 88: does the GPU's clock depend on the shape being timed? Run 82 timed version 8 at B33 H4
# S4k D128 full (exact rounds, no idle SM) at 621.6 TFLOP/s, under B2 H16 S4k (3% idle last round) at
# 624.6. nvidia-smi samples the SM clock and power every 20 ms while `attnprof bench` times version 8 and
# cuDNN on five D128 full shapes of 0.2-1.8 ms per call, each bench twice; the samples are split per bench
# by timestamps. Expected: under sustained HGMMA the H200 sits at its power limit; longer calls (fewer
# gaps for the L2 flush and launches between samples) draw more and clock lower, 1-3% from 0.44 to 1.8 ms.
set -u
export LD_LIBRARY_PATH=$PWD/gpu-carry/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cudnn_lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
[ -n "$cudnn_lib" ] && export LD_LIBRARY_PATH=$cudnn_lib:$LD_LIBRARY_PATH
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 20 > $OUT/smi.csv &
SMI=$!
sleep 1
bench() {  # b h s
  echo "== b$1 h$2 s$3 start $(date +%H:%M:%S.%N | cut -c1-12)"
  timeout 60 gpu-carry/attnprof bench --impl fused:hopper_v8,cudnn --interleave --device cuda -b $1 --heads $2 --kv-heads $2 \
    -s $3 --kv-seq $3 -d 128 --dtype bf16 --layout bhsd --no-causal --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror"
  echo "== end $(date +%H:%M:%S.%N | cut -c1-12)"
}
for a in "2 16 4096" "4 16 4096" "33 4 4096" "8 16 2048" "32 16 512" "2 16 4096" "4 16 4096" "33 4 4096" "8 16 2048" "32 16 512"; do
  bench $a | tee -a $OUT/bench.txt
done
kill $SMI
echo "smi samples: $(wc -l < $OUT/smi.csv)"
