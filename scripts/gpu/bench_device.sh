#!/usr/bin/env bash
# Runs on the GPU machine with a carried build dir (nothing is built there):
# the fp64 suite of every CUDA implementation, then the bench and peers tables
# at the study's shape and a second shape. Logs under $OUT (or ./out).
#   BUILD=build-attn scripts/gpu/bench_device.sh
set -uo pipefail
B=${BUILD:-build-attn}
O=${OUT:-out}
mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
# PyTorch's cuDNN (9.19, what its cudnn backend uses) rather than the system 9.14.
cudnn_lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
[ -n "$cudnn_lib" ] && export LD_LIBRARY_PATH=$cudnn_lib:${LD_LIBRARY_PATH:-}
echo "cudnn from: ${cudnn_lib:-system}"
# Shared libraries of this machine's build that the GPU image lacks (simdjson, fmt),
# copied into BUILD/runtime-libs before the call.
[ -d "$B/runtime-libs" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(cd "$B/runtime-libs" && pwd)
"$B/attnprof" --help > /dev/null || { echo "attnprof does not start here"; ldd "$B/attnprof" | grep "not found"; }
timeout ${TEST_TIMEOUT:-150} "$B/tests/attention/attention_cuda_test" > "$O/cuda_test.log" 2>&1
echo "attention_cuda_test rc=$? $(grep -cE '^\[       OK' "$O/cuda_test.log") ok, $(grep -cE '^\[  FAILED  \] Odd' "$O/cuda_test.log") failed"
grep -E "Failure|rel_error|Which is|refused|what\(\)" "$O/cuda_test.log" | head -30
echo "=== study shape: B=8 H=16 S=1024 D=64 bf16 causal"
BENCH_JSON="$O/bench_default.json" timeout 200 scripts/gpu/gpu_tables.sh "$B" 2>&1 | tee "$O/tables_default.txt"
if [ -n "${SHAPE2:-}" ]; then
  echo "=== $SHAPE2"
  BENCH_JSON="$O/bench_shape2.json" timeout 150 scripts/gpu/gpu_tables.sh "$B" $SHAPE2 2>&1 | tee "$O/tables_shape2.txt"
fi
echo "=== --trace and doctor on the math trace"
timeout 60 "$B/attnprof" bench --impl math,manual --repeats 5 --no-check --trace /tmp/attnprof-traces > /dev/null
echo "bench --trace rc=$? $(ls /tmp/attnprof-traces 2>/dev/null | tr '\n' ' ')"
timeout 60 "$B/attnprof" doctor /tmp/attnprof-traces/math.json 2>&1 | head -40
