#!/usr/bin/env bash
# Installs what attnprof needs to build and test, by Debian package name.
# Idempotent: installs only what is missing; downloads nothing of its own.
set -euo pipefail
pkgs=(cmake make g++ pkg-config zlib1g-dev libsimdjson-dev libfmt-dev libcli11-dev
      libgtest-dev libgmock-dev libbenchmark-dev python3 python3-venv ninja-build time)
# --browser: headless Chromium too, for the test that opens the HTML reports (make test). It is the
# one optional package: if it cannot be installed, say so and go on (that test then reports skipped).
browser=0
[ "${1:-}" = "--browser" ] && browser=1
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi
if ((browser)) && ! dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q "install ok installed"; then
  echo "setup: installing chromium (headless, for the HTML report test)"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
           --no-install-recommends chromium; }; then
    echo "setup: WARNING: chromium could not be installed; the HTML report's browser test will be skipped"
  fi
fi
