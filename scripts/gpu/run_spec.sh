#!/usr/bin/env bash
# One GPU run from a short spec: what used to be a copied call.sh per run. On the GPU machine, from the
# repository root, with the build carried (`make gpu-pack`, carry gpu-pack; docs/gpu-runs.md):
#   scripts/gpu/run_spec.sh SPEC [BUILD=gpu-carry]
# Unpacks gpu-pack/gpu-carry.tgz if BUILD is not there, puts BUILD's runtime-libs and PyTorch's cuDNN on
# the library path, runs the spec's steps in order (one log each, a summary line each on stdout) and packs
# the logs, the spec and nvidia-smi's line into $OUT/run.tgz (./gpu-out without OUT). Exit 1 if a step
# failed. A spec is one step a line; `#` starts a comment:
#   test NAME [GTEST_FILTER]             a GPU test binary (tests/*/NAME), e.g. test fused_forward_test '*V8*'
#   ab IMPLS full|causal DTYPE BxHxSxD... attnprof bench --interleave --timing cold, BHSD, each shape in turn
#   sanitize PATHS [LAB_ARGS...]          memcheck and racecheck of the lab's small cases (lab/fused_device.sh)
#   timers PATH B,H,HKV,S,SKV,D,CAUSAL... the lab's per-tile timers of one path
#   gpu_check [SANPATHS]                  the project's GPU check (gpu/gpu_check.sh)
#   grid [DEADLINE_S]                     the fused kernel's case list against cuDNN and flash (lab/fused_grid.py)
#   python_check WHEEL_DIR                the wheel's GPU check (gpu/python_gpu_check.sh)
#   corpus ARGS...                        scripts/corpus/gpu_corpus.sh BUILD DIR ARGS (e.g. --set wild --jobs 4)
#   record_check                          attnprof record's GPU check (record/gpu_record_check.sh)
#   timeout SECONDS                       the limit for the steps after it (default 300)
#   sh COMMAND...                         the rest of the line through bash (BUILD and W, the log folder, set)
set -uo pipefail
spec=${1:?usage: scripts/gpu/run_spec.sh SPEC [BUILD]}
B=${2:-gpu-carry}
FINAL=${OUT:-gpu-out}
mkdir -p "$FINAL"
[ -d "$B" ] || [ ! -f gpu-pack/gpu-carry.tgz ] || tar -xzf gpu-pack/gpu-carry.tgz
# xz packs (a third smaller, for calls near the carry's 64 MiB) through Python's lzma: no xz needed there.
[ -d "$B" ] || [ ! -f gpu-pack/gpu-carry.txz ] ||
  python3 -c "import tarfile; t = tarfile.open('gpu-pack/gpu-carry.txz'); t.extraction_filter = getattr(tarfile, 'tar_filter', None); t.extractall()"
[ -x "$B/attnprof" ] || { echo "run_spec: no $B/attnprof (make gpu-pack, carry gpu-pack)"; exit 2; }
W=$(mktemp -d)
trap 'tar -czf "$FINAL/run.tgz" -C "$W" .' EXIT
cp "$spec" "$W/spec"
export BUILD=$B W
export LD_LIBRARY_PATH=$PWD/$B/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# PyTorch's cuDNN first, so `cudnn` runs the library PyTorch's cudnn backend runs.
cudnn_lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
[ -n "$cudnn_lib" ] && export LD_LIBRARY_PATH=$cudnn_lib:$LD_LIBRARY_PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader | tee "$W/gpu.txt" ||
  { echo "run_spec: no GPU here"; exit 2; }

T0=$(date +%s) limit=300 n=0 status=0
bench_rows() { grep -E "^(fused|cudnn|math|manual|eager)|rror"; }
step() {  # step NAME ARGS...: runs one spec line, its output in $W/NN-NAME.txt
  local name=$1 log
  shift
  n=$((n + 1))
  log=$(printf '%s/%02d-%s.txt' "$W" "$n" "$name")
  echo "[$(($(date +%s) - T0)) s] $name $*"
  case $name in
    test)
      local bin
      bin=$(ls "$B"/tests/*/"$1" 2>/dev/null | head -1)
      timeout "$limit" "${bin:-$B/tests/$1}" ${2:+"--gtest_filter=$2"} >"$log" 2>&1
      local rc=$?
      echo "  rc=$rc $(grep -E '^\[  (PASSED|FAILED) ' "$log" | tr '\n' ' ')"
      grep -B2 -A6 "Failure" "$log" | head -20
      return $rc ;;
    ab)
      local impls=$1 mask=$2 dtype=$3 shape b h s d rc=0
      shift 3
      for shape in "$@"; do
        IFS=x read -r b h s d <<<"$shape"
        echo "== $impls b$b h$h s$s d$d $mask $dtype" | tee -a "$log"  # the whole table in the log
        timeout "$limit" "$B/attnprof" bench --impl "$impls" --interleave --device cuda -b "$b" --heads "$h" \
          --kv-heads "$h" -s "$s" --kv-seq "$s" -d "$d" --dtype "$dtype" --layout bhsd \
          "$([ "$mask" = causal ] && echo --causal || echo --no-causal)" --timing cold 2>&1 | tee -a "$log" | bench_rows
        [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
      done
      return $rc ;;
    sanitize)
      local paths=$1
      shift
      BUILD="$B" OUT="$W/sanitizer" SAN_TIMEOUT="$limit" SANPATH="$paths" LAB_ARGS="$*" \
        scripts/lab/fused_device.sh sanitize >"$log" 2>&1
      local all clean
      all=$(grep -c '^san_' "$log") clean=$(grep -E '^san_' "$log" | grep -cE 'ERROR SUMMARY: 0 errors|0 hazards displayed')
      rm -rf "$W/sanitizer"
      echo "  sanitizer runs: $all, clean: $clean"
      [ "$all" -gt 0 ] && [ "$all" -eq "$clean" ] ;;
    timers)
      local path=$1 args=() one
      shift
      for one in "$@"; do args+=(--shape "$one"); done
      timeout "$limit" "$B/attnprof_fused_lab" --timers --path "$path" "${args[@]}" >"$log" 2>&1
      local rc=$?
      grep -v "^device" "$log" | head -40
      return $rc ;;
    gpu_check)
      SANPATH="${1:-}" OUT="$W/gpu_check" timeout "$limit" scripts/gpu/gpu_check.sh "$B" >"$log" 2>&1
      local rc=$?
      grep -E "^== |rc=|PASSED|FAILED|fused |cudnn " "$log" | head -30
      rm -rf "$W/gpu_check/traces" "$W/gpu_check/sanitizer"
      return $rc ;;
    grid)
      local deadline=${1:-480}
      timeout $((deadline + 80)) python3 scripts/lab/fused_grid.py run "$B/attnprof" "$W/grid" --flash \
        --deadline "$deadline" >"$log" 2>&1
      local rc=$?
      grep -E "^(PASS|FAIL)|deadline" "$log"
      return $rc ;;
    python_check)
      timeout "$limit" scripts/gpu/python_gpu_check.sh "$1" >"$log" 2>&1
      local rc=$?
      tail -25 "$log"
      return $rc ;;
    corpus)
      timeout "$limit" scripts/corpus/gpu_corpus.sh "$PWD/$B" "$W/corpus" "$@" >"$log" 2>&1
      local rc=$?
      grep -v Warning "$log" | tail -30
      return $rc ;;
    record_check)
      timeout "$limit" scripts/record/gpu_record_check.sh "$B" "$W/record" >"$log" 2>&1
      local rc=$?
      grep -cE "^PASS" "$log" | sed 's/^/  PASS lines: /'
      grep -E "^FAIL" "$log"
      return $rc ;;
    sh)
      timeout "$limit" bash -c "$*" >"$log" 2>&1
      local rc=$?
      tail -30 "$log"
      return $rc ;;
    *)
      echo "  run_spec: unknown step '$name'"
      return 2 ;;
  esac
}
# The logs so far into $FINAL/run.tgz after every step, so a call cut at the device's limit (SIGKILL: no
# EXIT trap) still brings back every step that finished.
pack() { tar -czf "$FINAL/run.tgz.part" -C "$W" . && mv "$FINAL/run.tgz.part" "$FINAL/run.tgz"; }
while read -r line <&3; do
  if [[ $line =~ ^[[:space:]]*sh[[:space:]]+(.*)$ ]]; then  # the rest of the line, as written
    step sh "${BASH_REMATCH[1]}" || { status=1; echo "  (step failed)"; }
    pack
    continue
  fi
  line=${line%%#*}
  set -f  # shell words, quoted as in bash, not file patterns ('*V8*' is a test filter)
  eval "set -- $line"
  set +f
  [ $# -eq 0 ] && continue
  if [ "$1" = timeout ]; then
    limit=$2
    continue
  fi
  step "$@" || { status=1; echo "  (step failed)"; }
  pack
done 3<"$spec"  # the steps' own stdin is not the spec
echo "[$(($(date +%s) - T0)) s] end, status $status; logs in $FINAL/run.tgz"
exit $status
