#!/usr/bin/env bash
# Builds the trace-reader fuzz target with clang (libFuzzer + ASan + UBSan) and
# runs it, seeded with the real traces. Usage: scripts/dev/fuzz_reader.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-120}"
if ! dpkg-query -W -f='${Status}' libclang-rt-14-dev 2>/dev/null | grep -q "install ok installed"; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang libclang-rt-14-dev
fi
# Every library is instrumented (coverage + ASan + UBSan), not only the target.
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNPROF_FUZZ=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
  -DATTNPROF_WITH_CUDA=OFF -DATTNPROF_BUILD_TESTS=OFF -DATTNPROF_BUILD_BENCHMARKS=OFF >/dev/null
# Builds share the machine's two cores with other builds: take the common lock if there is one.
flock /tmp/attnprof-build.lock cmake --build build-fuzz --target fuzz_trace_reader
corpus=build-fuzz/corpus
mkdir -p "$corpus"
# Seeds: the small real traces (plain and gzip) and a few hand-made edge cases.
cp examples/traces/sdpa_flash.json examples/traces/sdpa_cudnn.json "$corpus"/
# The one-line layout json.dump writes (its own fast path in the reader).
python3 -c "import json, sys; json.dump(json.load(open(sys.argv[1])), open(sys.argv[2], 'w'))" \
  examples/traces/sdpa_flash.json "$corpus"/oneline.json
cp tests/data/triton_example__triton_example.json.gz tests/data/execution_trace__benchmark_simple_add_trace.json.gz "$corpus"/
printf '[{"ph":"B","name":"a","ts":1,"pid":1,"tid":1},{"ph":"E","ts":2,"pid":1,"tid":1}]' >"$corpus"/array.json
printf '{"traceEvents":[{"ph":"X","cat":"kernel","name":"x\\"y","ts":1.5,"dur":2,"args":{"grid":[1,2,3]}}]}' >"$corpus"/esc.json
./build-fuzz/fuzz/fuzz_trace_reader -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 \
  -dict=fuzz/trace.dict "$corpus"
