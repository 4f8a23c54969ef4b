#!/usr/bin/env bash
# SASS of hopper_launch.cu's sm_90a kernels (the product's), here (no GPU): the build's own nvcc command for the file,
# cubin only, then nvdisasm. The CUDA 13.0 toolkit here has ptxas but no nvdisasm; PyPI has it:
#   pip download nvidia-cuda-nvdisasm --no-deps -d /tmp/nvd && cd /tmp/nvd && python3 -m zipfile -e *.whl .
# then NVDISASM=/tmp/nvd/nvidia/cu13/bin/nvdisasm (chmod +x). About a minute; then
# scripts/lab/sass_loops.py on the output (docs/working-here.md).
#   NVDISASM=... scripts/lab/fused_sass.sh OUT.sass [BUILD_DIR]
set -euo pipefail
out=${1:?usage: scripts/lab/fused_sass.sh OUT.sass [BUILD_DIR]}
build=${2:-build}
nvdisasm=${NVDISASM:-$(command -v nvdisasm || true)}
[ -x "$nvdisasm" ] || { echo "fused_sass.sh: no nvdisasm (set NVDISASM; see this script's header)" >&2; exit 1; }
[ -f "$build/build.ninja" ] || { echo "fused_sass.sh: $build is not a configured build folder" >&2; exit 1; }
# The build's command, through its own launcher (cmake/quiet_ptxas.sh: C7519 dropped, exit code kept).
cmd=$(ninja -C "$build" -t commands src/attention/fused/CMakeFiles/attnprof_fused.dir/hopper_launch.cu.o | tail -1)
cubin=$(mktemp --suffix=.cubin)
trap 'rm -f "$cubin" "$out.tmp"' EXIT
cmd=$(echo "$cmd" | sed "s# -o [^ ]*hopper_launch.cu.o# -o $cubin#; s#--generate-code=arch=compute_80,code=\[sm_80\]##; s# -c # -cubin #; s#-MD -MT [^ ]* -MF [^ ]*##")
(cd "$build" && eval "$cmd") || { echo "fused_sass.sh: compiling hopper_launch.cu to a cubin failed (above)" >&2; exit 1; }
"$nvdisasm" -c -sf "$cubin" > "$out.tmp" || { echo "fused_sass.sh: $nvdisasm failed on the cubin" >&2; exit 1; }
mv "$out.tmp" "$out"
echo "$out: $(grep -c '\.section[[:space:]]*\.text\.' "$out") kernels"
