#!/usr/bin/env bash
# Runs every Go fuzz target in the module, one at a time, each for the given
# budget (go test -fuzz accepts one target per invocation). The budget is a
# duration (10s) or an execution count (30000x). CI uses a count: on Go 1.26 a
# duration budget can fail a target with a bare "context deadline exceeded" and
# no crasher when the coordinator's deadline races a busy worker
# (go.dev/issue/75804, fixed in Go 1.27); a count has no deadline to race.
#
# Each new input the fuzzer finds interesting is minimized first, for up to
# -fuzzminimizetime (60 s by default): on the targets that go through a
# socket (netloop's) one minimization took the whole minute with no input
# run meanwhile. A count bounds it; a crasher is still minimized within it.
set -euo pipefail
fuzztime=${1:-10s}
minimize=${FUZZMINIMIZETIME:-50x}
cd "$(dirname "$0")/.."
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "== $pkg $target ($fuzztime)"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "$pkg"
	done
done
