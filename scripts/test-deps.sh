#!/usr/bin/env bash
# Installs what the tests need beyond Go: the npm packages the compatibility
# tests drive (each pinned by a package-lock.json under a testdata dir) and,
# when running as root, Debian's prometheus package (promtool and the server)
# and postgresql (initdb and the server for pgstore's tests).
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

# PostgreSQL for pgstore's tests: internal/pgtest starts a throwaway cluster
# with initdb/postgres (as user postgres when run as root) unless
# MEMGATE_TEST_POSTGRES names a server; CI fails those tests without it.
if [ -z "${MEMGATE_TEST_POSTGRES:-}" ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    echo "== apt-get install postgresql (initdb)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    # The package starts a cluster of its own on :5432; the tests start theirs.
    (systemctl stop postgresql || service postgresql stop || true) >/dev/null 2>&1
  else
    echo "initdb missing: install Debian's postgresql package (or set MEMGATE_TEST_POSTGRES) to run pgstore's tests" >&2
  fi
fi
