#!/usr/bin/env bash
# Makes the step-time traces of make_steps.py on a GPU machine, in one go: every
# torch.profiler program (twins and idle causes, one after another so their wall
# clocks do not share the GPU), then the `attnprof record` twins (NVTX "step"
# ranges, steps 3..10 recorded), then facts.json (the facts and each program's
# measured step times) and a per-trace summary (steps found, step span, GPU time).
#   scripts/corpus/gpu_steps.sh CARRY_DIR OUT_DIR [PACK_DIR]
# CARRY_DIR holds attnprof, libattnprof_inject.so and runtime-libs/ (make
# gpu-carry's folder will do); without it the record twins are skipped, said so.
# PACK_DIR: OUT_DIR's traces and facts also as tars of at most 15 MiB there (for a
# device tool that returns few files). STEPS_ONLY=NAME,... makes those programs alone.
# STEPS_ROUNDS=R (default 1): each twin group's members in one process, traced in turn R times
# (make_steps.py --rounds; the record twins likewise: one recording of each twin group's turn,
# make_steps.py --run-group, cut into a trace per member and round by --split-record).
# STEPS_ALTERNATE=1: the twins' steps alternate one by one within each round instead of in turn
# (make_steps.py --alternate: one trace per group and round, cut into one per member), so host noise
# falls on every twin alike.
set -uo pipefail
B=${1:?carry dir}
O=${2:?out dir}
P=${3:-}
mkdir -p "$O"
here=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader || { echo "no GPU here"; exit 1; }
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
status=0
ALT=""; [ "${STEPS_ALTERNATE:-0}" = 1 ] && ALT=--alternate
echo "=== torch.profiler programs ($SECONDS s)"
timeout "${STEPS_TIMEOUT:-330}" python3 "$here/make_steps.py" --out "$O" --only "${STEPS_ONLY:-}" --rounds "${STEPS_ROUNDS:-1}" $ALT 2>&1 | tee "$O/profiled.log" | grep -E "^(ok|FAIL)"
[ "${PIPESTATUS[0]}" = 0 ] || { status=1; grep -vE "^(ok|FAIL)" "$O/profiled.log" | tail -25; }

echo "=== attnprof record programs ($SECONDS s)"
A=""
if [ -x "$B/attnprof" ] && [ -e "$B/libattnprof_inject.so" ]; then
  A=$(cd "$B" && pwd)/attnprof
  [ -d "$B/runtime-libs" ] && export LD_LIBRARY_PATH=$(cd "$B/runtime-libs" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  if ldd "$B/libattnprof_inject.so" | grep -q "libcupti.*not found"; then  # CUPTI from PyTorch's wheels
    cupti=$(python3 -c 'import glob, os, nvidia; print(next(iter(sorted(glob.glob(os.path.join(list(nvidia.__path__)[0], "**", "libcupti.so.13"), recursive=True))), ""))' 2>/dev/null)
    [ -n "$cupti" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$cupti")
    echo "libcupti.so.13 from ${cupti:-nowhere}"
  fi
else
  echo "SKIP: no attnprof and libattnprof_inject.so in $B"; status=1
fi
R=${STEPS_ROUNDS:-1}
record_names=$(python3 "$here/make_steps.py" --list --tracer "attnprof record" | python3 -c 'import json, sys; only = [x for x in sys.argv[1].split(",") if x]; print(" ".join(f["name"] + ":" + f["twin_group"] for f in json.load(sys.stdin) if not only or f["name"] in only))' "${STEPS_ONLY:-}")
if [ -n "$A" ] && { [ "$R" -gt 1 ] || [ -n "$ALT" ]; }; then
  # Each record twin group in one process, its members in turn (or alternating) R rounds (as the torch.profiler twins):
  # one recording of the whole turn, cut into a trace per member and round.
  for group in $(for x in $record_names; do echo "${x#*:}"; done | sort -u); do
    t0=$SECONDS
    if timeout 240 "$A" record --capture-range nvtx:twins -o "$O/$group.group.json.gz" -- \
        python3 "$here/make_steps.py" --run-group "$group" --rounds "$R" $ALT --out "$O" >"$O/$group.log" 2>&1 &&
        python3 "$here/make_steps.py" --split-record "$O/$group.group.json.gz" --out "$O" >>"$O/$group.log" 2>&1; then
      echo "ok   $group: $(grep -c ^wrote "$O/$group.log") traces in $((SECONDS - t0)) s"
      rm -f "$O/$group.group.json.gz"
    else
      echo "FAIL $group: $(tail -3 "$O/$group.log" | tr '\n' ' ')"; status=1
    fi
  done
elif [ -n "$A" ]; then
  for r in $(seq 0 $((R - 1))); do
  for name in $(for x in $record_names; do echo "${x%%:*}"; done); do
    if [ "$SECONDS" -gt "${STEPS_DEADLINE:-500}" ]; then echo "SKIP $name: past ${STEPS_DEADLINE:-500} s"; status=1; continue; fi
    t0=$SECONDS
    stem=$name; [ "$r" = 0 ] || stem=$name.round$r
    if timeout 90 "$A" record --capture-range nvtx:step --steps 3:10 -o "$O/$stem.json.gz" -- \
        python3 "$here/make_steps.py" --run "$name" --round "$r" --out "$O" >"$O/$stem.log" 2>&1; then
      echo "ok   $stem: $(( $(stat -c %s "$O/$stem.json.gz") / 1024 )) KiB in $((SECONDS - t0)) s"
    else
      echo "FAIL $stem: $(tail -3 "$O/$stem.log" | tr '\n' ' ')"; status=1
    fi
  done
  done
fi

echo "=== facts and summary ($SECONDS s)"
python3 "$here/make_steps.py" --facts "$O" >"$O/facts.json" || status=1
python3 "$here/make_steps.py" --summary "$O" | tee "$O/summary.txt" || status=1
[ -z "$P" ] || python3 "$here/make_steps.py" --pack "$O" "$P" || status=1
echo "done in $SECONDS s, status $status"
exit $status
