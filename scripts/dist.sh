#!/usr/bin/env bash
# make dist: the saguin binary for amd64, arm64 and armhf (cgo, static), the
# man page made from --help, a .deb per architecture made with nfpm, and
# SHA256SUMS over all of them, in dist/ (gitignored).
#
#   scripts/dist.sh [ARCH...]     # default: amd64 arm64 armhf
#
# The binaries are built from the committed tree; the .deb version is the
# binary's own: the tag vX.Y.Z as X.Y.Z, else 0.0~git<commit time>.<revision>,
# with +dirty when the tree had changes (the --version line says the same).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
DIST=${DIST:-dist}
NFPM_VERSION=v2.45.2
archs=("$@")
[ ${#archs[@]} -gt 0 ] || archs=(amd64 arm64 armhf)
mkdir -p "$DIST/bin" "$DIST/doc"

for arch in "${archs[@]}"; do
	echo "dist: building saguin for $arch" >&2
	scripts/build-target.sh "$arch" "$DIST/bin/saguin-linux-$arch"
done

# Everything below is the same for every architecture, so it comes from a
# binary this machine runs: the amd64 one if built, else a native build.
host="$DIST/bin/saguin-linux-amd64"
if [ ! -x "$host" ]; then
	host="$DIST/bin/saguin-host"
	"$GO" build -buildvcs=true -o "$host" ./cmd/saguin
fi

# The version: from git, as the toolchain stamps the binary.
rev=$(git rev-parse --short=12 HEAD)
if tag=$(git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null); then
	version=${tag#v}
else
	version="0.0~git$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S).$rev"
fi
[ -z "$(git status --porcelain --untracked-files=no)" ] || version+="+dirty"

# The man page is --help and --version, through help2man.
help2man --no-info --section=1 --name="MQTT 3.1.1 and 5 broker for edge gateways" \
	--version-option=--version --help-option=--help "$host" | gzip -9n >"$DIST/doc/saguin.1.gz"
gzip -9nc docs/packaging.md >"$DIST/doc/packaging.md.gz"
gzip -9nc docs/configuration.md >"$DIST/doc/configuration.md.gz"
{
	echo "saguin ($version) unstable; urgency=medium"
	echo
	echo "  * Built from revision $rev of https://github.com/saguin-edge/saguin."
	echo
	echo " -- Sagüin maintainers <maintainers@saguin-edge.github.io>  $(git log -1 --format=%cD)"
} | gzip -9n >"$DIST/doc/changelog.gz"

for arch in "${archs[@]}"; do
	echo "dist: packaging saguin $version for $arch" >&2
	rm -f "$DIST"/saguin_*_"$arch".deb
	DEB_ARCH=$arch DEB_VERSION=$version DIST=$DIST \
		"$GO" run "github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION" package \
		--config packaging/nfpm.yaml --packager deb --target "$DIST/"
done

rm -f "$DIST/bin/saguin-host"
(cd "$DIST" && sha256sum bin/saguin-linux-* saguin_*.deb >SHA256SUMS)
echo "dist: $(cd "$DIST" && ls saguin_*.deb | tr '\n' ' ')" >&2
