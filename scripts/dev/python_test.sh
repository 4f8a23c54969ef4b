#!/usr/bin/env bash
# The Python package as a user gets it: a fresh virtual environment, `pip install ".[test]"`
# (scikit-build-core builds the C++ core through this repository's CMake; the CUDA parts are left
# out here, as on a machine without a GPU: -C cmake.define.ATTNPROF_WITH_CUDA=ON/OFF), then pytest
# on python/tests (the whole API on real traces).
#   scripts/dev/python_test.sh [VENV_DIR=build-pyvenv]   (and VENV_DIR-mcp: the [mcp] extra alone)
set -euo pipefail
cd "$(dirname "$0")/../.."
V=${1:-build-pyvenv}
rm -rf "$V"
python3 -m venv "$V"
"$V/bin/python" -m pip install -q --upgrade pip
"$V/bin/python" -m pip install -q ".[test]" -C cmake.define.ATTNPROF_WITH_CUDA=OFF
# From outside the source tree, so `import attnprof` is the installed package.
(cd "$V" && bin/python -m pytest -q -p no:cacheprovider "$OLDPWD/python/tests")
# The MCP extra alone, as an agent's user installs it: a second fresh venv with `pip install ".[mcp]"`
# (the C++ build is reused from build-py/), then the server started and asked over stdio.
M="$V-mcp"
rm -rf "$M"
python3 -m venv "$M"
"$M/bin/python" -m pip install -q --upgrade pip
"$M/bin/python" -m pip install -q ".[mcp]" -C cmake.define.ATTNPROF_WITH_CUDA=OFF
(cd "$M" && bin/python "$OLDPWD/scripts/dev/mcp_latency.py" "$OLDPWD/examples/traces/sdpa_math.json" --runs 1)
