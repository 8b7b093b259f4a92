#!/usr/bin/env bash
# Puts promtool into bin/ for make lint's check of deploy/alerts.yml and
# deploy/prometheus.yml: Debian's prometheus package, downloaded and
# unpacked, not installed (installing it would also start a Prometheus
# server). Go's module proxy serves promtool's source too, but building it
# takes most of the Kubernetes client with it.
set -euo pipefail
bin="$1/promtool"
[ -x "$bin" ] && exit 0
command -v apt-get >/dev/null 2>&1 || { echo "promtool: no apt-get here; put a promtool at $bin" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "downloading Debian's promtool into bin/ (once)…" >&2
( cd "$tmp" && { apt-get download prometheus >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get download prometheus >/dev/null 2>&1; }; } )
dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/x"
install -m 0755 "$tmp/x/usr/bin/promtool" "$bin"
"$bin" --version | head -1 >&2
