#!/usr/bin/env bash
# Session 10, run 54: issue 13's grid on a freshly started H200 (version 18 in the default for causal D=128).
tar -xzf gpu-pack/gpu-carry.tgz && GTEST=1 DEADLINE=420 scripts/fused_grid_call.sh
