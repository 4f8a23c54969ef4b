#!/usr/bin/env bash
# Makes the multi-rank traces of make_ranks.py on a GPU machine, in one go (issue 39): a 4-rank
# DDP training job over gloo on GPU 0 (rank 2 eager attention, rank 3 batch 8), one torch.profiler
# trace per rank (ddp_llama_rank{R}.json.gz) and facts.json, then a check of each trace with
# json/gzip alone (distributedInfo, ProfilerStep ranges, the attention ops per rank).
#   scripts/corpus/gpu_ranks.sh OUT_DIR
#   RANKS_TRACER=record scripts/corpus/gpu_ranks.sh OUT_DIR BUILD   the same job under BUILD/attnprof record
#     (--capture-range nvtx:step --steps 3:5): ddp_llama_record.rank{R}.json.gz and facts_record.json
# RANKS_TIMEOUT (s, default 300) bounds the job; RANKS_SYNC=auto|ddp|manual picks the gradient
# sync (auto: DDP, by hand per bucket if DDP fails). Leaves at most 6 files in OUT_DIR.
set -uo pipefail
O=${1:?out dir}
mkdir -p "$O"
here=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || { echo "no GPU here"; exit 1; }
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
status=0
limit=${RANKS_TIMEOUT:-300}
echo "=== the job ($SECONDS s)"
if [ "${RANKS_TRACER:-}" = record ]; then
  B=${2:?RANKS_TRACER=record needs the build: gpu_ranks.sh OUT_DIR BUILD}
  timeout "$limit" "$B/attnprof" record -o "$O/ddp_llama_record.json" --capture-range nvtx:step --steps 3:5 -- \
    python3 "$here/make_ranks.py" --out "$O" --tracer "attnprof record" --sync "${RANKS_SYNC:-auto}" \
    --timeout $((limit - 15)) 2>&1 | tee "$O/make_ranks.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  rm -f "$O/ddp_llama_record.json" "$O/ddp_llama_record.json.traces"  # the job runner's (no GPU work)
else
  timeout "$limit" python3 "$here/make_ranks.py" --out "$O" --sync "${RANKS_SYNC:-auto}" --timeout $((limit - 15)) \
    2>&1 | tee "$O/make_ranks.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
echo "=== traces ($SECONDS s)"
for f in "$O"/*.json.gz; do
  [ -e "$f" ] || { echo "no traces"; status=1; break; }
  n=$(stat -c %s "$f")
  echo "$(basename "$f") $n bytes ($((n / 1024)) KiB)"
  [ "$n" -le 1572864 ] || { echo "  over 1.5 MiB"; status=1; }
done
echo "=== check ($SECONDS s)"
python3 "$here/make_ranks.py" --check "$O" || status=1
echo "done in $SECONDS s, status $status"
exit $status
