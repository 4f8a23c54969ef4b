#!/usr/bin/env bash
# Session 16, run 97: decoding beyond the dynamic KV cache, unseen by every fix: Llama generate() with
# flex_attention (Inductor compiles the decode steps: flex's decoding template, dynamic shapes) and with
# a static cache (full-length K/V, masked). Expected: 64 fused forward calls each; the risk is flex's
# decode kernel, which no rule names yet (flex_decoding). ~2 min (compiles).
set -u
B=$PWD/gpu-carry
CORPUS_TIMEOUT=400 scripts/corpus/gpu_corpus.sh $B $OUT/wild --set wild \
  --only llama_flex_attention_bf16_infer_generate,llama_sdpa_bf16_infer_generate_static --jobs 2 2>&1 |
  grep -v Warning | tee $OUT/wild.txt
for f in $OUT/wild/*.json.gz; do timeout 60 $B/attnprof doctor $f > ${f%.json.gz}.doctor.txt 2>&1; done
tar -cf $OUT/run97.tar -C $OUT wild
