#!/usr/bin/env bash
# Reader throughput and peak memory on a large synthetic trace (see BENCHMARKS.md):
# builds a 600 MB trace from the real ones (once; LAYOUT kineto, as PyTorch writes
# traces, or compact, one event per line), then runs the Google Benchmark program
# and the whole doctor under /usr/bin/time -v.
#   scripts/dev/trace_throughput.sh [BUILD_DIR] [MB] [LAYOUT]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
mb=${2:-600}
layout=${3:-kineto}
trace="$build/big_trace_${mb}MB_${layout}.json"
[ -f "$trace" ] || python3 scripts/dev/make_big_trace.py "$trace" --mb "$mb" --layout "$layout"
ATTNPROF_TRACE="$trace" "$build/benchmarks/trace_throughput"
echo
/usr/bin/time -v "$build/attnprof" doctor "$trace" 2>&1 >/dev/null | grep -E "Elapsed|Maximum resident|User time"
