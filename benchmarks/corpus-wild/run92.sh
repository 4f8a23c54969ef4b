#!/usr/bin/env bash
# Session 16, run 92: the doctor fixes of run 91 (torch.compile's reordered chain, flex_attention's op,
# autocast's precision, the causes of a math fallback) on programs they were not made on, and the
# `unseen` set (Qwen2, OPT, GPT-NeoX, RoBERTa) as the regression check of the attention view.
# Expected: the five holdout programs (Mistral eager compiled, GPT-NeoX eager compiled training, Qwen2
# SDPA under fp16 autocast training, flex_attention training, Falcon SDPA training: math forward and
# backward) all agree with their facts; the unseen set stays 28 of 28 as in its last run; ~4 min.
set -u
B=$PWD/gpu-carry
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
M=scripts/corpus/make_corpus.py
new=mistral_eager_bf16_infer_compile,gpt_neox_eager_fp16_train_compile,qwen2_sdpa_fp16_train_amp,llama_flex_attention_bf16_train,falcon_sdpa_bf16_train
( timeout 420 scripts/corpus/gpu_corpus.sh $B $OUT/unseen --set unseen > $OUT/unseen.txt 2>&1 ) &
O=$OUT/holdout
mkdir -p $O
python3 $M --set wild --list | python3 -c "import json, sys; f = json.load(sys.stdin); json.dump([x for x in f if x['name'] in '$new'.split(',')], open('$O/facts.json', 'w'), indent=1)"
timeout 420 python3 $M --set wild --out $O --only $new 2>&1 | tee $O/make.log
el "holdout made"
python3 scripts/corpus/check_corpus.py $B/attnprof $O 2>&1 | tee $O/check.txt
for f in $O/*.json.gz; do timeout 60 $B/attnprof doctor $f > ${f%.json.gz}.doctor.txt 2>&1; done
wait
el "unseen done"
echo "unseen: $(grep -c "^ok" $OUT/unseen.txt) ok lines (made + checked)"; grep -E "^(FAIL|MISSING)|=== doctor" $OUT/unseen.txt; sed -n '/^fused-time estimate/,$p' $OUT/unseen.txt
tar -cf $OUT/run92.tar -C $OUT holdout unseen.txt
