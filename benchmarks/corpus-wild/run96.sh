#!/usr/bin/env bash
# Session 16, run 96: which SDPA inputs force the math backend on the H200 with PyTorch 2.11 (the rules
# behind doctor's math_causes). Expected: q/v/mask with a last-dim stride != 1 and unequal heads without
# enable_gqa have no fused backend; head dims 72/100 (not multiples of 8) do (flash pads); FP64 none;
# what the large head dims (288, 512) and an FP32 mask with bf16 q do is the question. ~10 s.
set -u
python3 benchmarks/corpus-wild/run96_sdpa_rules.py 2>&1 | tee $OUT/rules.txt
