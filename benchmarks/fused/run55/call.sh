#!/usr/bin/env bash
# Session 10, run 55: the project GPU check at the session's last kernel code (version 18 in the default).
tar -xzf gpu-pack/gpu-carry.tgz && OUT=$OUT/gc timeout 500 scripts/gpu_check.sh gpu-carry > $OUT/gpu_check.txt 2>&1
