#!/usr/bin/env bash
# The version of this checkout, as builds stamp it: its tag (v1.2.0), the
# tag and the commits since (v1.2.0-3-g0123abcd4567), or before any tag
# v0.0.0-N-gCOMMIT; "+dirty" when tracked files differ from the commit.
# Outside a git checkout: dev.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! git rev-parse --verify -q HEAD >/dev/null 2>&1; then
	echo dev
	exit 0
fi
if ! v=$(git describe --tags --match 'v[0-9]*' --abbrev=12 2>/dev/null); then
	v="v0.0.0-$(git rev-list --count HEAD)-g$(git rev-parse --short=12 HEAD)"
fi
git diff --quiet HEAD -- 2>/dev/null || v="$v+dirty"
echo "$v"
