#!/usr/bin/env bash
# Makes the real-program trace corpus on a GPU machine, in one go: every
# torch.profiler variant of make_corpus.py, then the `attnprof record` variants
# (unannotated, the program as is), then doctor's attention view of each.
#   scripts/corpus/gpu_corpus.sh CARRY_DIR OUT_DIR [--only NAME,...]
# CARRY_DIR is `make gpu-carry`'s folder (attnprof + libattnprof_inject.so).
set -uo pipefail
B=$(cd "${1:?carry dir}" && pwd)
O=${2:?out dir}
shift 2
mkdir -p "$O"
here=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || { echo "no GPU here"; exit 1; }
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
python3 "$here/make_corpus.py" --list >"$O/facts.json"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
status=0
timeout ${CORPUS_TIMEOUT:-420} python3 "$here/make_corpus.py" --out "$O" "$@" || status=1
for name in $(python3 -c "import json; print(' '.join(f['name'] for f in json.load(open('$O/facts.json')) if f['tracer'] != 'torch.profiler'))"); do
  [ $# -gt 0 ] && [[ "$*" != *"$name"* ]] && continue
  t0=$SECONDS
  if timeout 300 "$B/attnprof" record -o "$O/$name.json.gz" -- python3 "$here/make_corpus.py" --run "$name" >"$O/$name.log" 2>&1; then
    echo "ok   $name: $(( $(stat -c %s "$O/$name.json.gz") / 1024 )) KiB in $((SECONDS - t0)) s"
  else
    echo "FAIL $name: $(tail -2 "$O/$name.log" | tr '\n' ' ')"; status=1
  fi
done
echo "=== doctor's attention view"
for t in "$O"/*.json.gz; do
  printf '%s: ' "$(basename "$t")"
  "$B/attnprof" doctor --json "$t" 2>&1 | python3 -c "
import json, sys
try:
    d = json.load(sys.stdin)
except Exception as e:
    print('doctor failed'); raise SystemExit
a = d.get('attention')
calls = ', '.join(f\"{x['implementation']} {x['pass']} x{x['calls']}\" for x in a or []) if a is not None else 'no attention view'
print(calls, '|', sorted({f['id'] + ('/' + f['scope'] if 'scope' in f else '') for f in d['findings']}))"
done
exit $status
