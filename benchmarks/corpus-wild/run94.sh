#!/usr/bin/env bash
# Session 16, run 94: the holdout of run 93's fixes (Inductor's pointwise kernels are no GEMM or
# attention kernel; a CUDA graph replay's kernels judged without the op around the launch): nine wild
# programs no fix has seen (CUDA graphs on GPT-2 SDPA and Qwen2 eager fp16, Mistral SDPA compiled, BERT
# eager compiled training, Gemma D=256 training with gradient checkpointing, OPT eager fp16 training
# traced with stacks and memory, T5 eager training, Llama SDPA training with a padding mask, BART
# generate (encoder once, decoder self and cross attention per token: 132 calls)).
# Expected: all nine agree with their facts; the likeliest miss is BART's generate count. ~2 min.
set -u
B=$PWD/gpu-carry
only=gpt2_sdpa_bf16_infer_cudagraph,qwen2_eager_fp16_infer_cudagraph,mistral_sdpa_bf16_infer_compile,bert_eager_bf16_train_compile,gemma_sdpa_bf16_train_checkpoint,opt_eager_fp16_train_stack,t5_eager_bf16_train,llama_sdpa_bf16_train_padded,bart_sdpa_bf16_infer_generate
scripts/corpus/gpu_corpus.sh $B $OUT/wild --set wild --only $only --jobs 3 2>&1 | grep -v Warning | tee $OUT/wild.txt
for f in $OUT/wild/*.json.gz; do timeout 60 $B/attnprof doctor $f > ${f%.json.gz}.doctor.txt 2>&1; done
tar -cf $OUT/run94.tar -C $OUT wild
