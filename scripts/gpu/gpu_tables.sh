#!/usr/bin/env bash
# On a GPU machine: the attnprof bench table and the PyTorch peers table for one
# shape, from one command, plus the comparisons the bench issue asks for
# (math/manual ratio vs PyTorch's, our cudnn vs PyTorch's cudnn backend).
# Usage: scripts/gpu/gpu_tables.sh BUILD_DIR [--batch N --heads N --kv-heads N --seq N
#        --kv-seq N --head-dim N --dtype bf16|fp16|fp32 --no-causal]
# Default shape: the study's B=8 H=16 S=1024 D=64 bf16 causal.
set -uo pipefail
build=${1:?usage: gpu_tables.sh BUILD_DIR [shape options]}
shift
here=$(cd "$(dirname "$0")" && pwd)
# Use PyTorch's cuDNN when it has one, so `cudnn` and PyTorch's cudnn backend run the
# same library version (ours is loaded by soname, libcudnn.so.9).
cudnn_lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
[ -n "$cudnn_lib" ] && [ -d "$cudnn_lib" ] && export LD_LIBRARY_PATH=$cudnn_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# BENCH_JSON=FILE keeps the bench's JSON (kernel names per implementation),
# PEERS_JSON=FILE the peers' JSON.
if [ -n "${BENCH_JSON:-}" ]; then
  json=$BENCH_JSON
else
  json=$(mktemp --suffix=.json)
  trap 'rm -f "$json"' EXIT
fi
# BENCH_ARGS: options for attnprof bench only (e.g. --trace DIR).
"$build/attnprof" bench --device cuda --json-file "$json" ${BENCH_ARGS:-} "$@"
bench_rc=$?
echo
if python3 -c "import torch" 2>/dev/null; then
  peers_json=${PEERS_JSON:-${json%.json}.peers.json}
  python3 "$here/peers.py" --attnprof-json "$json" --json-file "$peers_json" "$@"
  # Where the two math/manual ratios differ: kernel by kernel, one forward each.
  python3 "$here/kernel_compare.py" "$json" "$peers_json"
  [ -z "${PEERS_JSON:-}" ] && rm -f "$peers_json"
else
  echo "peers: PyTorch is not installed here; no peers table"
fi
exit $bench_rc
