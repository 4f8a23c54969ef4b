#!/usr/bin/env bash
# Session 13's grid verdict, three fresh H200s: runs 73 and 74 (the final default: version 29 by
# use_dynamic), and run 72, which ran version 29 by an earlier rule on 8 cases the final rule sends back
# to their old kernels (version 18 or 6; SASS unchanged since runs 59-61): those 8 from run 61. Every
# other case of run 72 ran the final SASS. Run from the repository root.
set -eu
F=benchmarks/fused
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/g3" "$W/r61"
tar -xzf "$F/run72/grid.tgz" -C "$W/g3"
tar -xzf "$F/run61/grid.tgz" -C "$W/r61"
for c in b32h16s512d128_causal_bf16_bhsd b16h16s1024d128_causal_bf16_bhsd b8h32s1024d128_causal_bf16_bhsd \
  b16h16s1024d128_causal_fp16_bhsd b8h16s1000d128_causal_bf16_bhsd b1h8s2048d128_causal_bf16_bhsd \
  b2h16s512x8192d128_causal_bf16_bhsd b2h16s512x8192d128_causalbr_bf16_bhsd; do
  rm -f "$W/g3/grid/$c".*
  cp "$W/r61/grid/$c".* "$W/g3/grid/"
done
(cd "$W/g3" && tar -czf grid.tgz grid)
python3 scripts/fused_grid.py summarize "$F/run73/grid.tgz" "$F/run74/grid.tgz" "$W/g3/grid.tgz"
