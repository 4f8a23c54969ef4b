#!/usr/bin/env bash
# Fetches cudnn-frontend's C++ headers by package name from PyPI
# (nvidia-cudnn-frontend; its wheel carries include/cudnn_frontend.h) into DIR,
# for the cudnn attention implementation. Nothing is vendored into git.
# Usage: scripts/fetch_cudnn_frontend.sh DIR
set -euo pipefail
dir=${1:?usage: fetch_cudnn_frontend.sh DIR}
[ -f "$dir/include/cudnn_frontend.h" ] && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --timeout 20 --retries 1 --no-deps --only-binary=:all: nvidia-cudnn-frontend -d "$tmp"
mkdir -p "$dir"
python3 - "$tmp" "$dir" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/nvidia_cudnn_frontend-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith("include/"):
            z.extract(name, sys.argv[2])
PY
echo "cudnn-frontend headers in $dir/include"
