#!/usr/bin/env bash
# Session 16, run 91: doctor on real programs kept out of the repository, of kinds no earlier set had
# (make_corpus.py --set wild): ALiBi (Bloom: baddbmm), D=96 (Phi-3), D=256 with MQA (Gemma), MQA
# broadcast into SDPA (Falcon), encoder-decoders with cross-attention (T5, BART), a ViT at 197 tokens,
# generate() with a KV cache, autocast, padding masks, torch.compile and flex_attention.
# Expected: every program builds and runs (25 by torch.profiler, 3 by `attnprof record`); doctor's
# implementation, precision and call counts match the facts on most; the likeliest misses are
# flex_attention (a Triton template kernel no rule names yet) and the compiled programs (Inductor's
# fused softmax between extern bmm calls). Wall time ~6-8 min (compiles).
set -u
B=$PWD/gpu-carry
O=$OUT/wild
mkdir -p $O
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
M=scripts/corpus/make_corpus.py
python3 $M --set wild --list > $O/facts.json
slow=llama_eager_bf16_infer_compile,gpt2_eager_bf16_train_compile,llama_sdpa_bf16_train_compile,llama_flex_attention_bf16_infer
fast=$(python3 -c "import json; print(','.join(f['name'] for f in json.load(open('$O/facts.json')) if f['tracer'] == 'torch.profiler' and f['name'] not in '$slow'.split(',')))")
# Three processes at once (16 cores): the compiled programs, the rest, and the recorded ones.
timeout 480 python3 $M --set wild --out $O --only $slow > $O/slow.log 2>&1 &
timeout 480 python3 $M --set wild --out $O --only $fast > $O/fast.log 2>&1 &
(
for name in bloom_eager_bf16_train_record t5_sdpa_bf16_infer_record llama_sdpa_bf16_infer_generate_record; do
  t0=$SECONDS
  if timeout 200 $B/attnprof record -o $O/$name.json.gz -- python3 $M --set wild --run $name > $O/$name.log 2>&1; then
    echo "ok   $name: $(( $(stat -c %s $O/$name.json.gz) / 1024 )) KiB in $((SECONDS - t0)) s"
  else
    echo "FAIL $name: $(tail -2 $O/$name.log | tr '\n' ' ')"
  fi
done
) > $O/record.log 2>&1 &
wait
el "made"
cat $O/fast.log $O/slow.log $O/record.log | grep -E "^(ok|FAIL)"
el "doctor against the facts"
python3 scripts/corpus/check_corpus.py $B/attnprof $O 2>&1 | tee $O/check.txt
for f in $O/*.json.gz; do timeout 60 $B/attnprof doctor $f > ${f%.json.gz}.doctor.txt 2>&1; done
el "done"
tar -cf $OUT/wild.tar -C $OUT wild
ls -la $OUT/wild.tar
