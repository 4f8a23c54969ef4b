#!/usr/bin/env bash
# Session 16, run 95: `attnprof record` on compiled programs, recorded whole (3 steps, the first one
# compiling): Llama eager inference and GPT-2 eager training under torch.compile, Llama SDPA under CUDA
# graphs (mode="reduce-overhead": warm-up, capture, replay).
# Expected: the recorder captures the Triton kernels (driver launches) and the graph's kernels; doctor
# counts 3 x layers calls per pass. The question is the compiling step: Inductor autotunes its Triton
# kernels there (extra softmax runs between the GEMMs) and CUDA graph trees capture without running.
set -u
B=$PWD/gpu-carry
only=llama_eager_bf16_infer_compile_record,gpt2_eager_bf16_train_compile_record,llama_sdpa_bf16_infer_cudagraph_record
scripts/corpus/gpu_corpus.sh $B $OUT/wild --set wild --only $only --jobs 2 2>&1 | grep -v Warning | tee $OUT/wild.txt
for f in $OUT/wild/*.json.gz; do timeout 60 $B/attnprof doctor $f > ${f%.json.gz}.doctor.txt 2>&1; done
tar -cf $OUT/run95.tar -C $OUT wild
