#!/usr/bin/env bash
# doctor --replay checked on real programs, on a GPU machine, in one go: makes the replay set
# (make_corpus.py --set replay: Llama and GPT-2 with eager, SDPA-math and fused attention, bf16 and
# fp16, inference and training, plus two `attnprof record` runs), then replay_check.py on it.
#   scripts/corpus/gpu_replay.sh CARRY_DIR OUT_DIR [SET=replay]
# SET "unseen" checks the families kept out of the repository (Qwen2, OPT, GPT-NeoX, RoBERTa).
set -uo pipefail
B=$(cd "${1:?carry dir}" && pwd)
O=${2:?out dir}
set_name=${3:-replay}
here=$(cd "$(dirname "$0")" && pwd)
cudnn_lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
[ -n "$cudnn_lib" ] && [ -d "$cudnn_lib" ] && export LD_LIBRARY_PATH=$cudnn_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
status=0
"$here/gpu_corpus.sh" "$B" "$O" --set "$set_name" || status=1
echo "=== doctor --replay against the facts and the fused twins"
python3 "$here/replay_check.py" "$B/attnprof" "$O" || status=1
exit $status
