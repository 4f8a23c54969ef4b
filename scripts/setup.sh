#!/usr/bin/env bash
# Installs what attnprof needs to build and test, by Debian package name.
# Idempotent: installs only what is missing; downloads nothing of its own.
set -euo pipefail
pkgs=(cmake make g++ pkg-config zlib1g-dev libsimdjson-dev libfmt-dev libcli11-dev
      libgtest-dev libgmock-dev libbenchmark-dev python3 python3-venv ninja-build time)
# --browser: also headless Chromium, for the test that opens the HTML reports (make test).
[ "${1:-}" = "--browser" ] && pkgs+=(chromium)
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
