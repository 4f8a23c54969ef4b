#!/usr/bin/env bash
# Fetches cudnn-frontend's C++ headers by package name from PyPI
# (nvidia-cudnn-frontend, pinned; its wheel carries include/cudnn_frontend.h)
# into DIR, for the cudnn attention implementation. Nothing is vendored into git.
# Usage: cmake/fetch_cudnn_frontend.sh DIR [VERSION]
set -euo pipefail
dir=${1:?usage: fetch_cudnn_frontend.sh DIR [VERSION]}
version=${2:-1.32.0}
if [ -f "$dir/include/cudnn_frontend.h" ] && [ "$(cat "$dir/VERSION" 2>/dev/null)" = "$version" ]; then
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetching nvidia-cudnn-frontend==$version (headers only) from PyPI into $dir"
if ! python3 -m pip download --quiet --timeout 20 --retries 1 --no-deps --only-binary=:all: \
     "nvidia-cudnn-frontend==$version" -d "$tmp"; then
  echo "could not download nvidia-cudnn-frontend==$version from PyPI (no network, or no such version)" >&2
  exit 1
fi
rm -rf "$dir"
mkdir -p "$dir"
python3 - "$tmp" "$dir" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/nvidia_cudnn_frontend-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith("include/"):
            z.extract(name, sys.argv[2])
PY
echo "$version" >"$dir/VERSION"
echo "cudnn-frontend $version headers in $dir/include"
