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

# apt_install PACKAGE WHAT WHY installs a Debian package when running as
# root, and stops the service the package may start (the tests start their
# own); otherwise it says what is missing and why.
apt_install() {
  if [ "$(id -u)" = 0 ]; then
    echo "== apt-get install $1 ($2)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null
    (systemctl stop "$1" || service "$1" stop || true) >/dev/null 2>&1
  else
    echo "$2 missing: install Debian's $1 package $3" >&2
  fi
}

# promtool and the server for the alert-rule tests (the package starts a
# server on :9090 on some systems).
if ! command -v promtool >/dev/null 2>&1 && git ls-files 'deploy/prometheus/*' | grep -q .; then
  apt_install prometheus promtool "to run the alert-rule tests"
fi

# PostgreSQL for pgstore's tests: internal/pgtest starts a throwaway cluster
# with initdb/postgres (as user postgres when run as root) unless
# MEMGATE_TEST_POSTGRES names a server; CI fails those tests without it.
# The package starts a cluster of its own on :5432.
if [ -z "${MEMGATE_TEST_POSTGRES:-}" ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  apt_install postgresql initdb "(or set MEMGATE_TEST_POSTGRES) to run pgstore's tests"
fi
