#!/usr/bin/env bash
# Runs every test of memgate: installs what the tests need (npm packages from
# their lockfiles, Debian's prometheus for promtool and the server), checks
# formatting and vet, then runs the whole suite with the race detector, and
# the two tests too slow under it without.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/test-deps.sh

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
echo "== go vet"
go vet ./...
echo "== go test -race"
go test -race -count=1 -timeout 20m "$@" ./...
# Without the race detector, what it would slow to minutes: the shipped
# classifier is what the corpus trains, byte for byte (ten fits of 20,000
# texts), and the real corpus by source, 34,000 writes held to their
# figures (the race run skips both).
echo "== go test (the shipped classifier, the real corpus)"
go test -count=1 -timeout 10m -run '^TestTheShippedModelIsTrainedFromTheCorpus$' ./cmd/memgate-train/
go test -count=1 -timeout 10m -run '^TestCorpusBySource$' ./policy/
