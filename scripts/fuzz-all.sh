#!/usr/bin/env bash
# Runs every Go fuzz target in the module, one at a time, each for the given
# duration (go test -fuzz accepts one target per invocation).
set -euo pipefail
fuzztime=${1:-10s}
cd "$(dirname "$0")/.."
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "== $pkg $target ($fuzztime)"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
	done
done
