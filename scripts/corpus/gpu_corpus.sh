#!/usr/bin/env bash
# Makes real-program traces on a GPU machine, in one go: every torch.profiler
# variant of make_corpus.py, then the `attnprof record` variants (unannotated,
# the program as is), then checks doctor's attention view of each against the
# facts of how it was built (check_corpus.py).
#   scripts/corpus/gpu_corpus.sh CARRY_DIR OUT_DIR [--set corpus|unseen|wild|replay|forms|serving|decode] [--only NAME,...] [--jobs N]
# CARRY_DIR is `make gpu-carry`'s folder (attnprof + libattnprof_inject.so).
# --jobs N: N processes make the torch.profiler variants at once (compiled ones
# spread first), beside the recorded ones (the GPU machine has 16 cores; the
# traces' timings then share the GPU, their kernels and counts do not change).
set -uo pipefail
B=$(cd "${1:?carry dir}" && pwd)
O=${2:?out dir}
shift 2
set_name=corpus only="" jobs=1
while [ $# -gt 0 ]; do
  case $1 in
    --set) set_name=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    *) echo "gpu_corpus.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$O"
here=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || { echo "no GPU here"; exit 1; }
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
python3 "$here/make_corpus.py" --set "$set_name" --list >"$O/facts.json" || exit 1
# Where the programs ran is a fact of the traces too (the GPU's peak bandwidth, its SMs).
python3 -c "import json, sys; f = json.load(open(sys.argv[1])); [x.update(gpu=sys.argv[2]) for x in f]; json.dump(f, open(sys.argv[1], 'w'), indent=1)" \
  "$O/facts.json" "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
if [ -n "$only" ]; then  # the facts of the programs asked for only, so the check covers what was made
  python3 -c "import json, sys; f = json.load(open(sys.argv[1])); json.dump([x for x in f if x['name'] in sys.argv[2].split(',')], open(sys.argv[1], 'w'), indent=1)" "$O/facts.json" "$only"
fi
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
# The torch.profiler variants in `jobs` shards, slow (compiled) ones dealt first.
python3 - "$O/facts.json" "$jobs" >"$O/shards.txt" <<'PY'
import json, sys
f = [x for x in json.load(open(sys.argv[1])) if x["tracer"] == "torch.profiler"]
slow = [x["name"] for x in f if x.get("kind") in ("compile", "cudagraph") or x["impl"] == "flex_attention"]
names = slow + [x["name"] for x in f if x["name"] not in slow]
jobs = max(1, int(sys.argv[2]))
for i in range(jobs):
    if names[i::jobs]:
        print(",".join(names[i::jobs]))
PY
recorded() {
  local status=0
  for name in $(python3 -c "import json; print(' '.join(f['name'] for f in json.load(open('$O/facts.json')) if f['tracer'] != 'torch.profiler'))"); do
    local t0=$SECONDS
    if timeout 300 "$B/attnprof" record -o "$O/$name.json.gz" -- python3 "$here/make_corpus.py" --set "$set_name" --run "$name" >"$O/$name.log" 2>&1; then
      echo "ok   $name: $(( $(stat -c %s "$O/$name.json.gz") / 1024 )) KiB in $((SECONDS - t0)) s"
    else
      echo "FAIL $name: $(tail -2 "$O/$name.log" | tr '\n' ' ')"; status=1
    fi
  done
  return $status
}
status=0
if [ "$jobs" -gt 1 ]; then
  pids=() i=0
  while read -r names; do
    [ -n "$names" ] || continue
    timeout "${CORPUS_TIMEOUT:-420}" python3 "$here/make_corpus.py" --set "$set_name" --out "$O" --only "$names" >"$O/shard$i.log" 2>&1 &
    pids+=($!) i=$((i + 1))
  done <"$O/shards.txt"
  recorded >"$O/record.log" 2>&1 & pids+=($!)
  for p in "${pids[@]}"; do wait "$p" || status=1; done
  cat "$O"/shard*.log "$O/record.log" | grep -E "^(ok|FAIL)"
else
  if [ -s "$O/shards.txt" ]; then
    timeout "${CORPUS_TIMEOUT:-420}" python3 "$here/make_corpus.py" --set "$set_name" --out "$O" \
      --only "$(paste -sd, "$O/shards.txt")" || status=1
  fi
  recorded || status=1
fi
echo "=== doctor against the facts"
python3 "$here/check_corpus.py" "$B/attnprof" "$O" || status=1
exit $status
