#!/usr/bin/env bash
# Session 12, run 69: the same call as run 68 on a freshly started H200.
tar -xzf gpu-pack/gpu-carry.tgz && bash gpu-pack/run68.sh   # gpu-pack/run68.sh is benchmarks/fused/run68/call.sh
