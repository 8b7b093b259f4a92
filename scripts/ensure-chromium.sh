#!/usr/bin/env bash
# Makes sure a Chromium is there for the operator page's browser test
# (internal/page): $PACER_TEST_CHROMIUM when set, else Debian's chromium,
# installed with apt-get the first time (as make installs bin/temporal).
set -euo pipefail

if [ -n "${PACER_TEST_CHROMIUM:-}" ]; then
  [ -x "$PACER_TEST_CHROMIUM" ] && exit 0
  echo "PACER_TEST_CHROMIUM=$PACER_TEST_CHROMIUM is not an executable Chromium." >&2
  exit 1
fi
command -v chromium >/dev/null 2>&1 && exit 0

if command -v apt-get >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "installing Debian's chromium for the page's browser test (once)…" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y chromium || { $sudo apt-get update && $sudo apt-get install -y chromium; } || true
  command -v chromium >/dev/null 2>&1 && exit 0
fi

echo "Chromium is not installed and could not be: install it (Debian: apt-get install -y chromium)," >&2
echo "or set PACER_TEST_CHROMIUM to a Chromium binary." >&2
exit 1
