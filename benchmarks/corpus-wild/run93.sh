#!/usr/bin/env bash
# Session 16, run 93: the final doctor on every program of the wild set (39: the 28 of run 91, run 92's
# five holdouts, and six not seen by any fix: CUDA-graph replays under torch.compile
# mode="reduce-overhead", gradient checkpointing, and traces recorded with with_stack and
# profile_memory), beside the unseen set (28) as the regression check; the traces come back.
# Expected: unseen 28 of 28; wild 33 of 33 on the programs fixed or held out; the six new ones are the
# question (CUDA graphs: no CPU op under the graph's kernels, so eager chains are found from kernels
# alone; checkpointing: 2x the forward calls). ~4 min.
set -u
B=$PWD/gpu-carry
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
( scripts/corpus/gpu_corpus.sh $B $OUT/unseen --set unseen --jobs 2 > $OUT/unseen.txt 2>&1 ) &
CORPUS_TIMEOUT=480 scripts/corpus/gpu_corpus.sh $B $OUT/wild --set wild --jobs 4 2>&1 | grep -v Warning | tee $OUT/wild.txt
wait
el "done"
for f in $OUT/wild/*.json.gz; do timeout 60 $B/attnprof doctor $f > ${f%.json.gz}.doctor.txt 2>&1; done
echo "unseen: $(grep -c "^ok" $OUT/unseen.txt) ok lines (28 made + 28 checked)"; grep -E "^(FAIL|MISSING)" $OUT/unseen.txt
tar -cf $OUT/run93.tar -C $OUT wild unseen unseen.txt
ls -la $OUT/run93.tar
