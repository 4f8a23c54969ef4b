#!/usr/bin/env bash
# GPU end-to-end check of `attnprof record` (issue 3), for the GPU machine.
# Runs binaries from a build made elsewhere (no cmake here):
#   scripts/record/gpu_record_check.sh [BUILD_DIR=build-capture] [WORK_DIR=/tmp/attnprof-record-check]
# Checks: the recorder's GPU tests; SDPA math bf16 recorded vs torch.profiler
# (kernels per fwd range); the in-process API; traces left by a crash, exit()
# from a thread, SIGINT, SIGTERM, a Python KeyboardInterrupt; a refused second
# CUPTI client; then the overhead numbers. Ends with a PASS/FAIL table.
set -u
B=$(cd "${1:-build-capture}" && pwd)
W=${2:-/tmp/attnprof-record-check}
mkdir -p "$W"
ulimit -c 0  # the crash test must not leave a core file
# Libraries the build machine had and this one may not (fmt, simdjson).
[ -d "$B/rtlibs" ] && export LD_LIBRARY_PATH="$B/rtlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -e /usr/local/cuda/lib/libcupti.so.13 ] || [ ! -d "$B/rtlibs/cuda" ] ||
  export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$B/rtlibs/cuda"
A="$B/attnprof"
D="$B/attnprof_record_demo"
R=scripts/record
RESULTS=()
record() { RESULTS+=("$2 $1"); echo "=== $2 $1"; }
expect_rc() {  # NAME WANT CMD...: runs CMD, checks its exit code
  local name=$1 want=$2; shift 2
  timeout 300 "$@"; local rc=$?
  if [ "$rc" = "$want" ]; then record "$name (exit $rc)" PASS; else record "$name (exit $rc, want $want)" FAIL; fi
}
check() { local name=$1; shift; if timeout 120 "$@"; then record "$name" PASS; else record "$name" FAIL; fi; }

date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c 'import torch; print("torch", torch.__version__)'

check "recorder gpu tests" "$B/tests/capture/recorder_gpu_test"

# SDPA math bf16 under attnprof record, against torch.profiler on the same script.
expect_rc "record sdpa_math.py" 0 "$A" record -o "$W/sdpa_record.json.gz" -- python3 $R/sdpa_math.py
expect_rc "torch.profiler sdpa_math.py" 0 python3 $R/sdpa_math.py --torch-profile "$W/sdpa_torch.json"
check "sdpa: same kernels per fwd as torch.profiler" \
  python3 $R/check_trace.py "$W/sdpa_record.json.gz" --ranges fwd0,fwd1,fwd2 --min-kernels 30 --compare "$W/sdpa_torch.json"
check "sdpa trace read by attnprof's reader" "$D" validate "$W/sdpa_record.json.gz" 30
# attnprof doctor on both traces: same kernels per fwd, same findings.
doctor_summary() {
  "$A" doctor "$1" >"$1.doctor.txt" 2>&1 || return 1
  awk '/^  per fwd/ {print "kernels per fwd", $3}' "$1.doctor.txt"
  # The rules that fire; not their severity, which is the finding's share of the time and moves
  # between two runs of the program (safe-softmax sits near the 25% line of high at this shape).
  grep -oE '^ +[0-9]+\. \[[a-z]+\] [a-z0-9-]+' "$1.doctor.txt" | sed -E 's/^ +[0-9]+\. \[[a-z]+\] //' | sort
}
doctor_summary "$W/sdpa_record.json.gz" >"$W/doctor_record.sum"
doctor_summary "$W/sdpa_torch.json" >"$W/doctor_torch.sum"
cat "$W/sdpa_record.json.gz.doctor.txt"
echo "--- doctor summary: recorded | torch.profiler"; paste "$W/doctor_record.sum" "$W/doctor_torch.sum"
echo "--- severities: recorded | torch.profiler"
paste <(grep -oE '^ +[0-9]+\. \[[a-z]+\] [a-z0-9-]+' "$W/sdpa_record.json.gz.doctor.txt" | sort -k3) \
  <(grep -oE '^ +[0-9]+\. \[[a-z]+\] [a-z0-9-]+' "$W/sdpa_torch.json.doctor.txt" | sort -k3)
check "doctor: same kernels per fwd and findings as torch.profiler" \
  bash -c "test -s '$W/doctor_record.sum' && diff '$W/doctor_record.sum' '$W/doctor_torch.sum'"
expect_rc "record --doctor" 0 "$A" record --doctor -o "$W/sdpa_doctor.json" -- python3 $R/sdpa_math.py

# The in-process API, and a second CUPTI client refused clearly.
check "in-process API" "$D" inproc "$W/inproc.json"
check "in-process trace valid, 20 kernels" "$D" validate "$W/inproc.json" 20
check "second CUPTI client refused" "$D" conflict

# Endings: each must still leave a complete trace of the 5 steps (20 kernels).
expect_rc "normal exit" 0 "$A" record -o "$W/normal.json" -- "$D" normal
check "normal trace" "$D" validate "$W/normal.json" 20
expect_rc "crash (SIGSEGV)" 139 "$A" record -o "$W/crash.json.gz" -- "$D" crash
check "crash trace" "$D" validate "$W/crash.json.gz" 20
expect_rc "exit(7) from a thread" 7 "$A" record -o "$W/exit_thread.json" -- "$D" exit-thread
check "exit-from-thread trace" "$D" validate "$W/exit_thread.json" 20
expect_rc "SIGINT" 130 "$A" record -o "$W/sigint.json" -- "$D" sigint
check "SIGINT trace" "$D" validate "$W/sigint.json" 20
expect_rc "SIGTERM" 143 "$A" record -o "$W/sigterm.json" -- "$D" sigterm
check "SIGTERM trace" "$D" validate "$W/sigterm.json" 20
expect_rc "python KeyboardInterrupt" 130 "$A" record -o "$W/py_interrupt.json" -- python3 $R/interrupt.py
check "python KeyboardInterrupt trace" python3 $R/check_trace.py "$W/py_interrupt.json" --ranges before_interrupt --min-kernels 10
# Child processes: a trace per worker named by its rank, none for a process without GPU work.
expect_rc "launcher + 2 ranked workers + an idle CUDA process" 0 \
  bash -c "'$A' record -o '$W/kids.json.gz' -- python3 $R/children.py --launcher-gpu 2>'$W/kids.err'; rc=\$?; cat '$W/kids.err'; exit \$rc"
check "kids: the program's trace and rank0, rank1; nothing else" bash -c "cd '$W' && test -s kids.json.gz && \
  test -s kids.rank0.json.gz && test -s kids.rank1.json.gz && test \$(ls kids.* | grep -v '\.err\$' | wc -l) = 3"
check "kids: listed at exit, the idle one counted" bash -c "grep -q '3 traces' '$W/kids.err' && \
  grep -q 'rank 1, pid' '$W/kids.err' && grep -q '1 other process started CUDA but launched no GPU work' '$W/kids.err'"
check "kids: worker traces valid" "$D" validate "$W/kids.rank1.json.gz" 1
expect_rc "launcher without CUDA (torchrun-like)" 0 \
  bash -c "'$A' record -o '$W/kids2.json' -- python3 $R/children.py 2>'$W/kids2.err'; rc=\$?; cat '$W/kids2.err'; exit \$rc"
check "kids2: worker traces only, no error" bash -c "cd '$W' && test ! -e kids2.json && test -s kids2.rank0.json && \
  test -s kids2.rank1.json && grep -q 'none of the program itself' kids2.err && ! grep -q 'no trace written' kids2.err"
# The capture window: ticks of 100 ms from the first CUDA call; --delay 1 --duration 1 keeps about
# ticks 10..19 (the recorder is off before and after; the program runs on).
expect_rc "window --delay 1 --duration 1" 0 "$A" record --delay 1 --duration 1 -o "$W/window.json.gz" -- python3 $R/window.py
check "window: ticks 8..22 only" python3 $R/window.py check "$W/window.json.gz" 8 22
expect_rc "window --duration 0.5" 0 "$A" record --duration 0.5 -o "$W/window2.json" -- python3 $R/window.py
check "window: ticks 0..6 only" python3 $R/window.py check "$W/window2.json" 0 6
expect_rc "window opens after the program ended" 0 bash -c "'$A' record --delay 30 -o '$W/window3.json' -- python3 $R/window.py 2>'$W/window3.err'; rc=\$?; cat '$W/window3.err'; exit \$rc"
check "window: none written, said why" bash -c "test ! -e '$W/window3.json' && grep -q 'before the capture window opened' '$W/window3.err'"
# The window as NVTX ranges: exactly the ranges asked for, the program unrecorded outside them.
expect_rc "capture-range nvtx:step --steps 10:14" 0 "$A" record --capture-range nvtx:step --steps 10:14 -o "$W/steps.json.gz" -- python3 $R/window.py
check "steps: exactly ticks 10..14" python3 $R/window.py exact "$W/steps.json.gz" 10 14
expect_rc "capture-range nvtx:tick3" 0 "$A" record --capture-range nvtx:tick3 -o "$W/tick3.json" -- python3 $R/window.py
check "capture-range: exactly tick 3" python3 $R/window.py exact "$W/tick3.json" 3 3
expect_rc "capture-range nvtx:step --capture-count 2" 0 "$A" record --capture-range nvtx:step --capture-count 2 -o "$W/count2.json" -- python3 $R/window.py
check "capture-count: exactly ticks 0..1" python3 $R/window.py exact "$W/count2.json" 0 1
expect_rc "capture-range that never begins" 0 bash -c "'$A' record --capture-range nvtx:nosuch -o '$W/nosuch.json' -- python3 $R/window.py 2>'$W/nosuch.err'; rc=\$?; cat '$W/nosuch.err'; exit \$rc"
check "capture-range: none written, said why" bash -c "test ! -e '$W/nosuch.json' && grep -q \"no NVTX range 'nosuch'\" '$W/nosuch.err'"
echo "--- informational: torch.profiler inside a recorded program"
timeout 120 "$A" record -o "$W/both.json" -- python3 $R/sdpa_math.py --torch-profile "$W/both_torch.json"; echo "exit $?"

# Overhead: tiny-kernel loop and a realistic mix, in-process; then the injection
# path; then PyTorch's tiny-op loop plain, under attnprof record, under torch.profiler.
echo "--- overhead"
check "overhead in-process" "$B/attnprof_record_overhead"
timeout 300 "$B/attnprof_record_overhead" --plain --repeats 5
echo "injection path, all kinds:"
timeout 300 "$A" record -o "$W/overhead.json" -- "$B/attnprof_record_overhead" --plain --repeats 5
echo "injection path, --kinds kernel:"
timeout 300 "$A" record --kinds kernel -o "$W/overhead.json" -- "$B/attnprof_record_overhead" --plain --repeats 5
echo "PyTorch tiny-op loop: plain, attnprof record (all), attnprof record --kinds kernel, torch.profiler"
timeout 120 python3 $R/torch_overhead.py plain
timeout 120 "$A" record -o "$W/torch_overhead.json" -- python3 $R/torch_overhead.py plain
timeout 120 "$A" record --kinds kernel -o "$W/torch_overhead.json" -- python3 $R/torch_overhead.py plain
timeout 120 python3 $R/torch_overhead.py torch-profiler
timeout 120 python3 $R/torch_overhead.py plain

echo "=== summary"
printf '%s\n' "${RESULTS[@]}"
! printf '%s\n' "${RESULTS[@]}" | grep -q "^FAIL"
