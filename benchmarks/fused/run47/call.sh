#!/usr/bin/env bash
# Final call of session 9 (run 47): version 13 in one lambda run twice (7321a93): fused_forward_test,
# sanitizers on forced splits, the default against its parents and cuDNN on the three split grid
# shapes (twice) and two unsplit ones; then the project's GPU check and the Python package's.
set -u
FINAL=$OUT
OUT=$(mktemp -d)
trap 'tar -czf "$FINAL/run.tgz" -C "$OUT" .' EXIT
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
export LD_LIBRARY_PATH=$PWD/gpu-carry/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cudnn_lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
el "fused_forward_test"
( [ -n "$cudnn_lib" ] && export LD_LIBRARY_PATH=$cudnn_lib:$LD_LIBRARY_PATH
timeout 200 gpu-carry/tests/fused/fused_forward_test > $OUT/gtest.log 2>&1; echo "fused rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/gtest.log | tr '\n' ' ')"
grep -B2 -A6 "Failure" $OUT/gtest.log | head -20
el "sanitizers: hopper_v13 forced splits"
BUILD=gpu-carry OUT=$OUT/san LAB_ARGS="--persistent-ctas 3 --split-tail 1" SAN_TIMEOUT=100 SANPATH="hopper_v13" scripts/fused_device.sh sanitize > $OUT/sanitize.txt 2>&1
rm -rf $OUT/san
echo "sanitizer lines: $(grep -c '^san_' $OUT/sanitize.txt), clean: $(grep -E '^san_' $OUT/sanitize.txt | grep -cE ' ok .*(ERROR SUMMARY: 0 errors|0 hazards displayed)')"
bench() {  # b h s d impls
  echo "== b$1 h$2 s$3 d$4 full bf16"
  timeout 120 gpu-carry/attnprof bench --impl "$5" --interleave --device cuda -b $1 --heads $2 --kv-heads $2 -s $3 --kv-seq $3 \
    -d $4 --dtype bf16 --layout bhsd --no-causal --timing cold 2>&1 | grep -E "^(fused|cudnn)|rror"
}
el "A/B"
{
for rep in 1 2; do
bench 4 16 4096 128 fused:hopper,fused:hopper_v8,cudnn
bench 2 16 8192 128 fused:hopper,fused:hopper_v11,cudnn
bench 1 16 16384 128 fused:hopper,fused:hopper_v11,cudnn
done
bench 33 4 4096 128 fused:hopper_v8,fused:hopper_v13,cudnn
bench 33 4 8192 128 fused:hopper_v11,fused:hopper_v13,cudnn
} > $OUT/bench.txt 2>&1; cat $OUT/bench.txt )
el "gpu_check"
OUT=$OUT/gc timeout 330 scripts/gpu_check.sh gpu-carry > $OUT/gpu_check.txt 2>&1; echo "gpu_check rc=$?"
grep -E "^== |^(fused|math|manual|cudnn|sdpa)|sanitizer lines|^san_.*(FAIL|[1-9][0-9]* errors)" $OUT/gpu_check.txt | head -30
echo "sanitizer runs: $(grep -c '^san_' $OUT/gpu_check.txt), clean: $(grep -E '^san_' $OUT/gpu_check.txt | grep -cE ' ok .*(ERROR SUMMARY: 0 errors|0 hazards displayed)')"
grep -E "tests passed|tests failed|PASSED|FAILED" $OUT/gpu_check.txt | head -8
rm -rf $OUT/gc/traces
el "python"
T=$(mktemp -d); python3 -m pip install -q --no-deps --no-index --target $T/py dist/*.whl
PYTHONPATH=$T/py python3 scripts/python_host_cost.py > $OUT/host_cost.txt 2>&1; tail -3 $OUT/host_cost.txt
timeout 200 scripts/python_gpu_check.sh dist > $OUT/python.txt 2>&1; echo "python rc=$?"
grep -E "^FAIL|checks passed" $OUT/python.txt; sed -n '/^shape/,/^$/p' $OUT/python.txt | head -8
el "end"
