#!/usr/bin/env bash
# make arm-test: the arm64 and armhf builds checked under qemu-user-static,
# on this (amd64) machine. Per architecture:
#   1. go vet ./... for the target (type-checks every package for it: a
#      constant past 32 bits in an int fails on armhf here);
#   2. the store conformance script (store/storetest) and the test of offsets
#      past 2^32, cross-compiled for the target and run under qemu, on the
#      memory and sqlite providers;
#   3. a black-box smoke through the target's saguin binary: conformance/'s
#      command-line tests and its kill -9 restart tests on sqlite (start,
#      subscribe, publish, kill -9, restart, the session and the retained
#      value still there), the binary started through qemu.
# qemu is correctness only: no figure from here says anything about speed.
#
#   scripts/arm-test.sh [ARCH...]    # default: arm64 armhf
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
DIST=${DIST:-dist}
archs=("$@")
[ ${#archs[@]} -gt 0 ] || archs=(arm64 armhf)
tags='netgo osusergo sqlite_omit_load_extension'
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for arch in "${archs[@]}"; do
	case "$arch" in
	arm64) qemu=qemu-aarch64-static ;;
	armhf) qemu=qemu-arm-static ;;
	*) echo "arm-test: unknown architecture $arch (arm64, armhf)" >&2; exit 2 ;;
	esac
	command -v "$qemu" >/dev/null || { echo "arm-test: $qemu missing (scripts/install-test-deps.sh installs qemu-user-static)" >&2; exit 1; }
	mapfile -t env < <(scripts/build-target.sh "$arch" -env)
	bin="$DIST/bin/saguin-linux-$arch"
	if [ ! -x "$bin" ]; then
		echo "arm-test: $bin missing, building it" >&2
		mkdir -p "$DIST/bin"
		scripts/build-target.sh "$arch" "$bin"
	fi

	echo "arm-test: $arch: go vet ./..."
	env "${env[@]}" "$GO" vet -trimpath -tags "$tags" ./...

	for pkg in memory sqlite; do
		echo "arm-test: $arch: store/$pkg conformance script and offsets past 2^32, under $qemu"
		env "${env[@]}" "$GO" test -c -trimpath -tags "$tags" \
			-ldflags '-linkmode external -extldflags "-static"' \
			-o "$work/$pkg-$arch.test" "./store/$pkg"
		if ! (cd "store/$pkg" && "$qemu" "$work/$pkg-$arch.test" -test.count=1 -test.v \
			-test.run 'PassesTheConformanceScript$|OffsetsPastFourBillion' -test.timeout=10m) >"$work/$pkg-$arch.log" 2>&1; then
			cat "$work/$pkg-$arch.log" >&2
			exit 1
		fi
		grep -E '^(--- (PASS|FAIL): Test|PASS|ok)' "$work/$pkg-$arch.log"
	done

	echo "arm-test: $arch: command line and kill -9 restarts on sqlite through $bin under $qemu"
	printf '#!/bin/sh\nexec %s %s "$@"\n' "$qemu" "$(realpath "$bin")" >"$work/saguin-$arch"
	chmod +x "$work/saguin-$arch"
	"$GO" test -count=1 -timeout 10m ./conformance/ -binary "$work/saguin-$arch" \
		-run 'TestCLI(Help|FlagsAfterOperands|Misspelt)|TestRestartAfterKill9KeepsSqliteSessionsAndWhatTheyAreOwed|TestRestartAfterKill9KeepsTheSqliteRetainedStore|TestSQLiteProviderKeepsSessionsOwedMessagesAndRetainedValuesAcrossKill9' -v 2>&1 |
		grep -E '^(--- |ok|FAIL|PASS)' 
	"$work/saguin-$arch" --version
done
