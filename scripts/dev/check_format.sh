#!/usr/bin/env bash
# clang-format, pinned (PyPI clang-format==19.1.7, in a virtual environment
# under build-format/), over the C++ and CUDA sources git tracks.
#   scripts/dev/check_format.sh          check: list the files that differ, exit 1 if any
#   scripts/dev/check_format.sh --fix    reformat them in place
set -euo pipefail
cd "$(dirname "$0")/../.."
version=19.1.7
venv=build-format/venv
if [ ! -x "$venv/bin/clang-format" ] || [ "$("$venv/bin/clang-format" --version | grep -o '[0-9.]*' | head -1)" != "$version" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "clang-format==$version"
fi
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
if [ "${1:-}" = "--fix" ]; then
  "$venv/bin/clang-format" -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  "$venv/bin/clang-format" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "format: ${#bad[@]} file(s) differ from clang-format $version (scripts/dev/check_format.sh --fix):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "format: ${#files[@]} files match clang-format $version"
