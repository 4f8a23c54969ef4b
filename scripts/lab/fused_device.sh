#!/usr/bin/env bash
# Runs on the GPU machine with a carried build-fused (nothing is built there):
# SASS check, fp64 correctness suite, compute-sanitizer on small shapes, timing,
# and the PyTorch peers in the same call. Writes logs under $OUT (or ./out).
#   scripts/lab/fused_device.sh [check|sanitize|time|timers|all]...
# LAB_ARGS go to the lab's check and sanitizer runs (e.g. "--persistent-ctas 3": the persistent
# path's CTAs each walk several tiles even on the small cases).
set -uo pipefail
B=${BUILD:-build-fused}
O=${OUT:-out}
mkdir -p "$O"
steps=("${@:-all}")
has() { for s in "${steps[@]}"; do [[ $s == "$1" || $s == all ]] && return 0; done; return 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
if has sass; then
  cuobjdump --dump-sass "$B/attnprof_fused_lab" > "$O/sass.txt" 2>&1
  echo "HGMMA lines: $(grep -c HGMMA "$O/sass.txt"), HMMA lines: $(grep -c 'HMMA' "$O/sass.txt"), LDL/STL: $(grep -cE 'LDL|STL' "$O/sass.txt")"
fi
if has check; then
  timeout ${CHECK_TIMEOUT:-300} "$B/attnprof_fused_lab" --check ${CHECKPATH:+--path $CHECKPATH} ${LAB_ARGS:-} > "$O/check.log" 2>&1; echo "check rc=$?"
  grep -E "FAIL|checks:" "$O/check.log" | tail -40
fi
if has sanitize; then
  # One process per (tool, path, case), all at once: a slow case under racecheck no
  # longer hides the others behind one timeout. SAN_CASES: the --small case indices (default: all).
  SAN_CASES=${SAN_CASES:-$(seq 0 $(($("$B/attnprof_fused_lab" --count --small ${LAB_ARGS:-}) - 1)))}
  for tool in ${SAN_TOOLS:-memcheck racecheck}; do
    for path in ${SANPATH:-portable hopper one_tile persistent}; do
      for c in $SAN_CASES; do
        timeout ${SAN_TIMEOUT:-240} compute-sanitizer --tool $tool --error-exitcode 9 "$B/attnprof_fused_lab" \
          --check --small --path $path --case $c ${LAB_ARGS:-} > "$O/san_${tool}_${path}_$c.log" 2>&1 &
      done
    done
    wait
    for f in "$O"/san_${tool}_*.log; do
      echo "$(basename "$f" .log): $(grep -E '^check ' "$f" | sed 's/ rel_err.*unwritten [0-9]* / /' | tr -s ' ') $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$f" | tr '\n' ' ')"
    done
  done
fi
if has gtest; then
  timeout 120 "$B/tests/fused/fused_forward_test" ${GTEST_FILTER:+--gtest_filter=$GTEST_FILTER} > "$O/gtest.log" 2>&1
  echo "gtest rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$O/gtest.log" | tr '\n' ' ')"
fi
if has time; then
  timeout 240 "$B/attnprof_fused_lab" --time ${QUICK:+--quick} ${TPATH:+--path $TPATH} --csv "$O/fused.csv" > "$O/time.log" 2>&1; echo "time rc=$?"
  if [[ -n ${PEERS:-1} ]]; then
    PYTHONUNBUFFERED=1 python3 scripts/lab/fused_peers.py "$O/fused.csv" --out "$O/peers.csv" 2>&1 | tee "$O/peers.log"
  else
    cat "$O/time.log"
  fi
fi
if has timers; then  # per-tile timers of the default Hopper schedule (issue 13, step 1)
  timeout 120 "$B/attnprof_fused_lab" --timers > "$O/timers.log" 2>&1; echo "timers rc=$?"
  cat "$O/timers.log"
fi
