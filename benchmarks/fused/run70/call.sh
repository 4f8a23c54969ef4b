#!/usr/bin/env bash
# Session 12, run 70: run 68's call on a freshly started H200, for S4097 only, then the GPU check.
tar -xzf gpu-pack/gpu-carry.tgz && ONLY=b2h16s4097d128 CHECK=1 bash gpu-pack/run68.sh   # gpu-pack/run68.sh is benchmarks/fused/run68/call.sh
