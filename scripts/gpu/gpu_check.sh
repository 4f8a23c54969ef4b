#!/usr/bin/env bash
# The project's GPU check, on a machine with an NVIDIA GPU: `attnprof bench` at
# the study's shape with every implementation (traces kept), the PyTorch peers
# table and the kernel-by-kernel comparison (scripts/gpu/gpu_tables.sh); `attnprof
# doctor` on the fused and math traces; the GPU test binaries; compute-sanitizer
# (memcheck, racecheck) on the fused kernels' small cases. Runs binaries directly,
# so a build folder built elsewhere and copied here works (nothing is compiled).
# Logs go to $OUT (default ./gpu-out).
#   scripts/gpu/gpu_check.sh BUILD_DIR
set -uo pipefail
B=${1:-build}
O=${OUT:-gpu-out}
mkdir -p "$O"
here=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader || { echo "no GPU here"; exit 0; }
# PyTorch's cuDNN, when present, so our cudnn and PyTorch's cudnn backend run the same version.
cudnn_lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
[ -n "$cudnn_lib" ] && [ -d "$cudnn_lib" ] && export LD_LIBRARY_PATH=$cudnn_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
status=0
run() {  # run NAME TIMEOUT CMD...: keep the log, print its verdict
  local name=$1 limit=$2
  shift 2
  timeout "$limit" "$@" >"$O/$name.log" 2>&1
  local rc=$?
  [ $rc -ne 0 ] && status=1
  echo "== $name: rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$O/$name.log" | tr '\n' ' ')"
  grep -E "^\[  FAILED  \]|Failure|error" "$O/$name.log" | head -8
}
echo "=== attnprof bench and the PyTorch peers, study shape (B=8 H=16 S=1024 D=64 bf16 causal), every implementation"
BENCH_JSON="$O/bench.json" PEERS_JSON="$O/peers.json" BENCH_ARGS="--trace $O/traces" \
  timeout ${BENCH_TIMEOUT:-240} "$here/gpu_tables.sh" "$B" 2>&1 | tee "$O/tables.txt" || status=1
for impl in fused math; do
  if [ -f "$O/traces/$impl.json" ]; then
    echo "=== attnprof doctor on the $impl trace"
    "$B/attnprof" doctor "$O/traces/$impl.json" 2>&1 | tee "$O/doctor_$impl.txt" | sed -n '1,12p;/^Findings/,/fix:/p;/No findings/p'
  fi
done
for t in tests/fused/fused_forward_test tests/fused/fused_wgmma_test tests/capture/recorder_gpu_test tests/attention/attention_cuda_test; do
  [ -x "$B/$t" ] && run "$(basename "$t")" "${TEST_TIMEOUT:-150}" "$B/$t"
done
if command -v compute-sanitizer >/dev/null && [ -x "$B/attnprof_fused_lab" ]; then
  echo "=== compute-sanitizer on the fused kernels (one process per tool, path and small case)"
  # The persistent grid capped at 2 CTAs, so each CTA walks several tiles of the small cases.
  BUILD="$B" OUT="$O/sanitizer" LAB_ARGS="--persistent-ctas 2" "$here/../lab/fused_device.sh" sanitize | tee "$O/sanitizer.txt"
  grep -qE "check .* (FAIL|ok)" "$O/sanitizer.txt" || status=1
  grep -E "^san_" "$O/sanitizer.txt" | grep -vqE " ok .*(ERROR SUMMARY: 0 errors|0 hazards displayed)" && status=1
fi
exit $status
