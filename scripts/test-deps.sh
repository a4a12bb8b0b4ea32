#!/usr/bin/env bash
# Installs what the tests need beyond Go: the npm packages the compatibility
# tests drive (each pinned by a package-lock.json under a testdata dir) and,
# when running as root, Debian's prometheus package (promtool and the server).
set -euo pipefail
cd "$(dirname "$0")/.."

for lock in $(git ls-files '*/package-lock.json'); do
  dir=$(dirname "$lock")
  if [ ! -d "$dir/node_modules" ] || [ "$lock" -nt "$dir/node_modules" ]; then
    echo "== npm ci in $dir"
    npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
  fi
done

if ! command -v promtool >/dev/null 2>&1 && git ls-files 'deploy/prometheus/*' | grep -q .; then
  if [ "$(id -u)" = 0 ]; then
    echo "== apt-get install prometheus (promtool)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null
    # The package starts a server on :9090 on some systems; the tests start their own.
    (systemctl stop prometheus || service prometheus stop || true) >/dev/null 2>&1
  else
    echo "promtool missing: install Debian's prometheus package to run the alert-rule tests" >&2
  fi
fi
