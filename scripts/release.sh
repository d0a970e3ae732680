#!/usr/bin/env bash
# make release: clusterctl for linux and darwin on amd64 and arm64, each
# embedding the node agents (linux/amd64 and linux/arm64), with SHA256SUMS,
# into DIST (default dist/). Reproducible: the same commit gives the same
# bytes on any machine with the same Go: -trimpath, no VCS stamp (the
# commit comes through -ldflags), no build id, no cgo, and the files' times
# set to the commit's (SOURCE_DATE_EPOCH).
#
# TARGETS (space-separated GOOS/GOARCH) narrows the build, for tests.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
DIST=${DIST:-dist}
TARGETS=${TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
VERSION=${VERSION:-$(./scripts/version.sh)}
COMMIT=${COMMIT:-$(git rev-parse --short=12 HEAD)}
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
export SOURCE_DATE_EPOCH

"$GO" run ./internal/agentbin/mkdist -version "$VERSION" -o internal/agentbin/dist >/dev/null
mkdir -p "$DIST"
files=()
for target in $TARGETS; do
	os=${target%/*} arch=${target#*/}
	out="clusterctl-$VERSION-$os-$arch"
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$GO" build -trimpath -buildvcs=false \
		-ldflags "-s -w -buildid= -X main.version=$VERSION -X main.commit=$COMMIT" \
		-o "$DIST/$out" ./cmd/clusterctl
	touch -d "@$SOURCE_DATE_EPOCH" "$DIST/$out"
	files+=("$out")
done
(cd "$DIST" && sha256sum "${files[@]}" >SHA256SUMS && touch -d "@$SOURCE_DATE_EPOCH" SHA256SUMS)
echo "$DIST: ${files[*]} SHA256SUMS ($VERSION, commit $COMMIT)"
