#!/usr/bin/env bash
# The recorder on real training jobs (issue 18), for the GPU machine; binaries from a carried build:
#   scripts/record/gpu_training_check.sh CARRY OUT training   # memory, window, SIGKILL (~3 min)
#   scripts/record/gpu_training_check.sh CARRY OUT overhead   # the 500k-launch loop, side by side (~6 min)
#   scripts/record/gpu_training_check.sh CARRY OUT sigkill    # only the SIGKILL part of `training`
#   scripts/record/gpu_training_check.sh CARRY OUT steptime   # the training step's time, recorded vs
#                                                             # torch.profiler (~3 min with ROUNDS=3)
# training: a two-minute Hugging Face training loop (train_loop.py) unrecorded, recorded for steps
# 100-109 (--capture-range nvtx:step --steps 100:109) and recorded whole (streamed), at once; peak
# RSS of each, the window's trace checked step by step and read by doctor; then a program killed by
# SIGKILL while recorded leaves a valid trace. Ends with PASS/FAIL lines.
set -u
B=$(cd "$1" && pwd)
W=$2
WHAT=${3:-training}
mkdir -p "$W"
[ -d "$B/rtlibs" ] && export LD_LIBRARY_PATH="$B/rtlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -d "$B/runtime-libs" ] && export LD_LIBRARY_PATH="$B/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
A="$B/attnprof"
R=scripts/record
RESULTS=()
verdict() { if [ "$2" = 0 ]; then RESULTS+=("PASS $1"); else RESULTS+=("FAIL $1"); fi; echo "=== ${RESULTS[-1]}"; }
peak() {  # LOG CMD...: runs CMD, its output to LOG, then "peak_rss_mb N exit RC" (wait4: the process tree)
  local log=$1; shift
  python3 -c 'import os, subprocess, sys
p = subprocess.Popen(sys.argv[2:], stdout=open(sys.argv[1], "w"), stderr=subprocess.STDOUT)
_, status, ru = os.wait4(p.pid, 0)
print(f"peak_rss_mb {ru.ru_maxrss / 1024:.0f} exit {os.waitstatus_to_exitcode(status)}")' "$log" "$@"
}
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

if [ "$WHAT" = training ]; then
  S=${TRAIN_SECONDS:-120}
  peak "$W/plain.log" python3 $R/train_loop.py --seconds "$S" >"$W/plain.rss" &
  peak "$W/window.log" "$A" record --capture-range nvtx:step --steps 100:109 -o "$W/window.json.gz" -- \
    python3 $R/train_loop.py --seconds "$S" >"$W/window.rss" &
  peak "$W/full.log" "$A" record -o "$W/full.json.gz" -- python3 $R/train_loop.py --seconds "$S" >"$W/full.rss" &
  wait
  for m in plain window full; do echo "--- $m: $(cat $W/$m.rss)"; cat "$W/$m.log"; done
  ls -la "$W"/*.json.gz
  rss() { awk '{print $2}' "$W/$1.rss"; }
  echo "peak RSS MB: plain $(rss plain), window $(rss window), whole run $(rss full)"
  verdict "window run: peak RSS within 100 MB of the unrecorded run ($(rss window) vs $(rss plain))" \
    $(( $(rss window) - $(rss plain) <= 100 ? 0 : 1 ))
  # The whole run recorded: resident memory does not grow while it streams (40 s against the last sample).
  flat=$(awk '/^t=/ {split($3, a, "="); v[n++] = a[2]} END {d = v[n-1] - v[2]; print (n > 3 && d <= 50) ? 0 : 1, v[2], v[n-1]}' "$W/full.log")
  verdict "whole run streamed: RSS flat from 40 s on (MB at 40 s, at the end: ${flat#* })" "${flat%% *}"
  python3 $R/train_loop.py check "$W/window.json.gz" 100 109; verdict "window: exactly steps 100-109, kernels tied" $?
  timeout 120 "$A" doctor "$W/window.json.gz" >"$W/window.doctor.txt" 2>&1; verdict "doctor reads the window" $?
  head -40 "$W/window.doctor.txt"
  timeout 300 "$A" doctor --json "$W/full.json.gz" >"$W/full.doctor.json" 2>"$W/full.doctor.err"
  verdict "doctor reads the whole streamed run ($(du -m "$W/full.json.gz" | cut -f1) MB)" $?
  cat "$W/full.doctor.err" | head -5
fi
if [ "$WHAT" = training ] || [ "$WHAT" = sigkill ]; then
  # SIGKILL halfway (the program, not attnprof record): the streamed trace stays valid, with what was written.
  "$A" record -o "$W/killed.json.gz" -- python3 $R/torch_overhead.py plain --ops 50000000 --repeats 1 \
    2>"$W/killed.err" &
  rec=$!
  sleep 12
  pkill -9 -f "^python3 $R/torch_overhead.py plain --ops 50000000"
  wait $rec; rc=$?
  cat "$W/killed.err"; ls -la "$W/killed.json.gz"
  verdict "SIGKILL: record exits 137 (got $rc)" $(( rc == 137 ? 0 : 1 ))
  grep -q "the program was killed (SIGKILL)" "$W/killed.err"; verdict "SIGKILL: record says what the trace holds" $?
  python3 $R/check_trace.py "$W/killed.json.gz" --min-kernels 100000 --launch-coverage 0.99
  verdict "SIGKILL: the trace is valid, kernels tied to launches" $?
  timeout 120 "$A" doctor "$W/killed.json.gz" >/dev/null 2>"$W/killed.doctor.err"; verdict "SIGKILL: doctor reads it" $?
fi
if [ "$WHAT" = overhead ]; then
  python3 $R/overhead.py "$A" --ops "${OPS:-500000}" --rounds "${ROUNDS:-5}" --work "$W" --modes "${MODES:-}"
  verdict "overhead traces" $?
fi
if [ "$WHAT" = steptime ]; then
  # The training step's time, one process at a time, ROUNDS interleaved rounds: unrecorded, recorded
  # whole (launches by callbacks, streamed), recorded for the timed steps only (NVTX step window),
  # torch.profiler over the timed steps. STEPS timed after 15 warm-up steps; medians and ratios.
  N=${STEPS:-60}
  T="python3 $R/train_loop.py --steps $N --warmup 15"
  last=$((15 + N - 1))
  declare -A CMDS=(
    [plain]="$T"
    [record]="$A record -o $W/st-record.json.gz -- $T"
    [record-window]="$A record --capture-range nvtx:step --steps 15:$last -o $W/st-window.json.gz -- $T"
    [torch.profiler]="$T --torch-profiler $W/st-torch.json"
  )
  : >"$W/steptime.txt"
  for r in $(seq "${ROUNDS:-3}"); do
    for m in plain record record-window torch.profiler; do
      line=$(timeout 300 ${CMDS[$m]} 2>"$W/st-$m.err" | grep '^RESULT')
      echo "round $r $m $line"
      if [ -n "$line" ]; then echo "$m ${line#*ms_per_step=}" | awk '{print $1, $2}' >>"$W/steptime.txt"
      else echo "  $m failed:"; tail -3 "$W/st-$m.err"; fi
    done
  done
  python3 - "$W/steptime.txt" <<'PY'
import statistics, sys
t = {}
for line in open(sys.argv[1]):
    m, v = line.split()
    t.setdefault(m, []).append(float(v))
base = statistics.median(t["plain"])
for m, v in t.items():
    print(f"{m:16s} median {statistics.median(v):8.2f} ms/step  x{statistics.median(v) / base:.3f}  ({len(v)} runs)")
PY
  python3 $R/train_loop.py check "$W/st-window.json.gz" 15 "$last"; verdict "step-time window: exactly the timed steps" $?
fi
echo "=== summary"; printf '%s\n' "${RESULTS[@]}"
! printf '%s\n' "${RESULTS[@]}" | grep -q "^FAIL"
