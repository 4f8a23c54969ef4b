#!/usr/bin/env bash
# Opens attnprof's HTML reports in headless Chromium (Debian's package) and
# checks what a reader sees: the page loads with no console error, and the
# rendered DOM holds the timeline and the findings.
#   scripts/dev/check_html.sh ATTNPROF_BINARY [WORK_DIR]
# Exit 0 all good, 1 a check failed, 77 no chromium here (ctest: skipped).
set -u
A=${1:?usage: check_html.sh ATTNPROF_BINARY [WORK_DIR]}
W=${2:-$(mktemp -d)}
mkdir -p "$W"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$(command -v chromium || command -v chromium-browser || true)
[ -n "$B" ] || { echo "check_html: no chromium here (Debian package 'chromium'); skipped"; exit 77; }
fail=0
# open NAME.html EXPECTED... : loads the page; each EXPECTED must be in the rendered DOM.
open_page() {
  local page=$1; shift
  local dom="$W/$(basename "$page").dom" log="$W/$(basename "$page").log"
  timeout 60 "$B" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --enable-logging=stderr --v=0 \
    --dump-dom "file://$page" >"$dom" 2>"$log"
  local rc=$?
  if [ $rc -ne 0 ]; then echo "FAIL $page: chromium exited $rc"; fail=1; return; fi
  if grep -E "CONSOLE|Uncaught|SyntaxError" "$log" | grep -v "dbus" >/dev/null; then
    echo "FAIL $page: console messages:"; grep -E "CONSOLE|Uncaught|SyntaxError" "$log"; fail=1
  fi
  for want in "$@"; do
    grep -qF -- "$want" "$dom" || { echo "FAIL $page: the rendered page has no '$want'"; fail=1; }
  done
  echo "ok   $page ($(stat -c %s "$page") bytes)"
}
T="$ROOT/examples/traces"
C="$ROOT/tests/data/corpus"
"$A" doctor --html "$W/sdpa_math.html" "$T/sdpa_math.json" >/dev/null || fail=1
open_page "$W/sdpa_math.html" '<svg class="timeline"' 'class="kernel"' 'id="finding-unfused-attention-forward-attention"' \
  'id="finding-cuda-core-gemm-attention"' '<svg class="causes"'
"$A" doctor --html "$W/sdpa_flash.html" "$T/sdpa_flash.json" >/dev/null || fail=1
open_page "$W/sdpa_flash.html" '<svg class="timeline"' 'FlashAttention' 'No findings'
"$A" doctor --html "$W/manual.html" "$T/manual.json" >/dev/null || fail=1
open_page "$W/manual.html" '<svg class="timeline"' 'id="finding-unfused-attention-forward-attention"'
for name in llama_sdpa-math_bf16_train llama_eager_bf16_train_record bert_eager_fp32_train; do
  "$A" doctor --html "$W/$name.html" "$C/$name.json.gz" >/dev/null || fail=1
  open_page "$W/$name.html" '<svg class="timeline"' 'class="kernel"' 'id="finding-'
done
"$A" diff --html "$W/diff.html" "$T/sdpa_math.json" "$T/sdpa_flash.json" >/dev/null || fail=1
open_page "$W/diff.html" 'fused (FlashAttention)' 'sdpa-math' 'unfused-attention'
exit $fail
