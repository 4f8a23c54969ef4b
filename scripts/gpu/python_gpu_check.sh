#!/usr/bin/env bash
# On a GPU machine with PyTorch and transformers: installs a wheel built elsewhere (no registry
# needed: `pip wheel . -w dist` with the GPU machine's Python, carried over) into a scratch folder
# and runs python/tests/gpu_check.py (trace_handler and check on a Hugging Face model, attnprof.attention
# against SDPA in fp64, under torch.compile, and timed against SDPA flash and cuDNN).
#   scripts/gpu/python_gpu_check.sh [WHEEL_DIR=dist] [TRACE_DIR]
set -euo pipefail
W=${1:-dist}
T=$(mktemp -d)
py=$(python3 -c 'import sys; print(f"cp{sys.version_info.major}{sys.version_info.minor}")')
wheel=$(ls "$W"/attnprof-*-"$py"-*.whl | head -1)
python3 -m pip install -q --no-deps --no-index --target "$T/py" "$wheel"
PYTHONPATH="$T/py" python3 python/tests/gpu_check.py ${2:+"$2"}
