#!/usr/bin/env bash
# Session 12's grid verdict: runs 59-61's grids (the SASS of 47 of the 50 cases is unchanged since),
# with the three cases whose kernel changed taken from fresh machines: bottom-right Sq8192/Skv512 and
# S2049 from runs 66, 68, 69; S4097 from runs 68, 69, 70. Run from the repository root.
set -eu
F=benchmarks/fused
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
combine() {  # name base br_s2049_run s4097_run
  mkdir -p "$W/$1" "$W/$1a" "$W/$1b"
  tar -xzf "$F/$2/grid.tgz" -C "$W/$1"
  tar -xzf "$F/$3/grid.tgz" -C "$W/$1a"
  tar -xzf "$F/$4/grid.tgz" -C "$W/$1b"
  cp "$W/$1a"/grid/b2h16s8192x512d128_causalbr_bf16_bhsd.* "$W/$1a"/grid/b4h16s2049d128_causal_bf16_bhsd.* "$W/$1/grid/"
  cp "$W/$1b"/grid/b2h16s4097d128_causal_bf16_bhsd.* "$W/$1/grid/"
  (cd "$W/$1" && tar -czf grid.tgz grid)
}
combine g1 run59 run66 run68
combine g2 run60 run68 run69
combine g3 run61 run69 run70
python3 scripts/fused_grid.py summarize "$W/g1/grid.tgz" "$W/g2/grid.tgz" "$W/g3/grid.tgz"
