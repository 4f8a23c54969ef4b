#!/usr/bin/env bash
# Session 14, run 76: version 30 (version 8 at D=128 full attention in clusters of two CTAs, each K/V
# block loaded half by each CTA and multicast to both: FlashAttention-3's ClusterM=2). fused_forward_test
# (all: the case list has a new GQA case with an even tile count), sanitizers on hopper_v30 uncapped
# and on one cluster (cap 3 -> 2 CTAs), an A/B of v8, v30, the default and cuDNN on the D=128 full
# shapes, and Nsight Compute's L2 numbers for v8 and v30 at B2 H16 S4k.
# Expected: every test passes, sanitizers clean; v30 +1-4% over v8 if L2->SM bandwidth limits
# D=128 full attention (B2 H16 S4k reads ~2 GB of K/V from L2 in 0.45 ms, ~4.7 TB/s), within +-1% if not;
# L2 read bytes about halved for K/V.
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
el "fused_forward_test"
timeout 200 gpu-carry/tests/fused/fused_forward_test > $OUT/gtest.log 2>&1; echo "fused rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gtest.log | tr '\n' ' ')"
grep -B2 -A6 "Failure" $OUT/gtest.log | head -30
el "sanitizers: hopper_v30 uncapped, then on one cluster"
BUILD=gpu-carry OUT=$OUT/san1 SAN_TIMEOUT=100 SANPATH="hopper_v30" scripts/fused_device.sh sanitize > $OUT/sanitize1.txt 2>&1
BUILD=gpu-carry OUT=$OUT/san2 SAN_TIMEOUT=100 SANPATH="hopper_v30" LAB_ARGS="--persistent-ctas 3" scripts/fused_device.sh sanitize > $OUT/sanitize2.txt 2>&1
for f in $OUT/sanitize1.txt $OUT/sanitize2.txt; do
  echo "$f: sanitizer lines: $(grep -c '^san_' $f), clean: $(grep -E '^san_' $f | grep -cE ' ok .*(ERROR SUMMARY: 0 errors|0 hazards displayed)')"
  grep -E '^san_' $f | grep -vE ' ok .*(ERROR SUMMARY: 0 errors|0 hazards displayed)' | head -5
done
rm -rf $OUT/san1 $OUT/san2
bench() {  # impls b h s d dtype
  echo "== $1 b$2 h$3 s$4 d$5 full $6"
  timeout 120 gpu-carry/attnprof bench --impl $1 --interleave --device cuda -b $2 --heads $3 --kv-heads $3 -s $4 --kv-seq $4 \
    -d $5 --dtype $6 --layout bhsd --no-causal --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror"
}
el "A/B"
I=fused:hopper,fused:hopper_v8,fused:hopper_v30,cudnn
{
bench $I 2 16 4096 128 bf16
bench $I 8 16 2048 128 bf16
bench $I 2 16 4096 128 fp16
bench $I 8 16 2048 128 fp16
bench $I 4 16 4096 128 bf16
bench $I 16 16 1024 128 bf16
bench $I 32 16 512 128 bf16
bench fused:hopper,fused:hopper_v11,fused:hopper_v30,cudnn 2 16 8192 128 bf16
bench fused:hopper,fused:hopper_v11,fused:hopper_v30,cudnn 1 16 16384 128 bf16
} > $OUT/bench.txt 2>&1; cat $OUT/bench.txt
el "ncu: L2 at B2 H16 S4k"
for path in hopper_v8 hopper_v30; do
  timeout 60 ncu --metrics gpu__time_duration.sum,lts__t_bytes.sum,lts__t_bytes.sum.per_second,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,l1tex__m_xbar2l1tex_read_bytes.sum \
    -k regex:fused_fwd_hopper -c 1 gpu-carry/attnprof_fused_lab --time --quick --shape 2,16,16,4096,4096,128,0 --path $path > $OUT/ncu_$path.txt 2>&1
  echo "-- $path rc=$?"; grep -E "gpu__time|lts__|sm__pipe|l1tex__|ERR|rror" $OUT/ncu_$path.txt | head -10
done
el "end"
