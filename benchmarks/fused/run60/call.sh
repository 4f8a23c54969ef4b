#!/usr/bin/env bash
# Session 11, run 60: issue 13 grid on a fresh H200 (carry gpu-pack)
tar -xzf gpu-pack/gpu-carry.tgz && GTEST=1 DEADLINE=420 scripts/fused_grid_call.sh
