#!/usr/bin/env bash
# SASS of fwd_sm90.cu's sm_90a kernels, here (no GPU): the build's own nvcc command for the file,
# cubin only, then nvdisasm. The CUDA 13.0 toolkit here has ptxas but no nvdisasm; PyPI has it:
#   pip download nvidia-cuda-nvdisasm --no-deps -d /tmp/nvd && cd /tmp/nvd && python3 -m zipfile -e *.whl .
# then NVDISASM=/tmp/nvd/nvidia/cu13/bin/nvdisasm (chmod +x). About a minute; then
# scripts/sass_loops.py on the output (docs/working-here.md).
#   NVDISASM=... scripts/fused_sass.sh OUT.sass [BUILD_DIR]
set -euo pipefail
out=${1:?usage: scripts/fused_sass.sh OUT.sass [BUILD_DIR]}
build=${2:-build}
nvdisasm=${NVDISASM:-$(command -v nvdisasm || true)}
[ -x "$nvdisasm" ] || { echo "fused_sass.sh: no nvdisasm (set NVDISASM; see this script's header)" >&2; exit 1; }
[ -f "$build/build.ninja" ] || { echo "fused_sass.sh: $build is not a configured build folder" >&2; exit 1; }
cmd=$(ninja -C "$build" -t commands src/attention/fused/CMakeFiles/attnprof_fused.dir/fwd_sm90.cu.o | tail -1)
cmd=${cmd#*quiet_ptxas.sh }
cubin=$(mktemp --suffix=.cubin)
trap 'rm -f "$cubin"' EXIT
cmd=$(echo "$cmd" | sed "s# -o [^ ]*fwd_sm90.cu.o# -o $cubin#; s#--generate-code=arch=compute_80,code=\[sm_80\]##; s# -c # -cubin #; s#-MD -MT [^ ]* -MF [^ ]*##")
(cd "$build" && eval "$cmd") 2>&1 | grep -v "C7519" || true
"$nvdisasm" -c -sf "$cubin" > "$out.tmp" && mv "$out.tmp" "$out"
echo "$out: $(grep -c '\.section[[:space:]]*\.text\.' "$out") kernels"
