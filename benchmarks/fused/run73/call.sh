#!/usr/bin/env bash
# Session 13, run 73: issue 13's grid on a freshly started H200 with the default's final rule (version 29
# by use_dynamic; every kernel SASS-identical to run 72's). The device command, from the repository root:
#   tar -xzf gpu-pack/gpu-carry.tgz && DEADLINE=330 scripts/fused_grid_call.sh
exec env DEADLINE=330 scripts/fused_grid_call.sh "$@"
