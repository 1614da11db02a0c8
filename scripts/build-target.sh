#!/usr/bin/env bash
# Builds one saguin binary for a Debian architecture with cgo (the sqlite
# driver is C): amd64 with gcc, arm64 and armhf (GOARM=7) with Debian's cross
# compilers, statically linked against glibc so the same file runs on any
# gateway's libc - and under qemu-user without a sysroot.
#
#   scripts/build-target.sh ARCH OUT        # ARCH: amd64, arm64 or armhf
#   scripts/build-target.sh ARCH -env       # print the environment only
#
# netgo and osusergo keep glibc's NSS (which a static binary cannot load) out
# of name and user lookups; sqlite_omit_load_extension drops the one dlopen
# the SQLite amalgamation has. make arm-test compiles its test binaries with
# the same tags, so the go-sqlite3 objects are built once per architecture.
set -euo pipefail
arch=${1:?usage: build-target.sh amd64|arm64|armhf OUT}
out=${2:?usage: build-target.sh amd64|arm64|armhf OUT}
case "$arch" in
amd64) env=(GOARCH=amd64 CC=gcc) ;;
arm64) env=(GOARCH=arm64 CC=aarch64-linux-gnu-gcc) ;;
armhf) env=(GOARCH=arm GOARM=7 CC=arm-linux-gnueabihf-gcc) ;;
*) echo "build-target.sh: unknown architecture $arch (amd64, arm64, armhf)" >&2; exit 2 ;;
esac
env+=(GOOS=linux CGO_ENABLED=1)
if [ "$out" = -env ]; then
	printf '%s\n' "${env[@]}"
	exit 0
fi
# -buildvcs=true: the version and revision --version prints come from here,
# whatever GOFLAGS the machine sets.
exec env "${env[@]}" "${GO:-go}" build -trimpath -buildvcs=true \
	-tags 'netgo osusergo sqlite_omit_load_extension' \
	-ldflags '-s -w -linkmode external -extldflags "-static"' \
	-o "$out" ./cmd/saguin
