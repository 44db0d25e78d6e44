#!/usr/bin/env bash
# version.sh prints the -ldflags that stamp a Tessera binary's version
# (internal/version): what --version prints and tessera_build_info exports.
#
#   go build -ldflags "$(hack/version.sh)" ./scheduler
#
# VERSION, GIT_COMMIT and BUILD_DATE override what it reads from the tree;
# the Dockerfile passes them as build arguments, since its build context
# has no .git. Without git and without them: the chart's appVersion, an
# unknown commit and date.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pkg=github.com/tessera-gpu/tessera/internal/version

git_in_tree() { git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; }

version=${VERSION:-}
commit=${GIT_COMMIT:-}
date=${BUILD_DATE:-}
if git_in_tree; then
	if [[ -z "$commit" ]]; then
		commit=$(git -C "$root" rev-parse HEAD)
		if [[ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]]; then
			commit+="-dirty"
		fi
	fi
	# The commit's time, not the clock's: the same tree stamps the same binary.
	[[ -n "$date" ]] || date=$(git -C "$root" show -s --format=%cI HEAD)
	[[ -n "$version" ]] || version=$(git -C "$root" describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || true)
fi
if [[ -z "$version" ]]; then
	version=v$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$root/deploy/helm/tessera/Chart.yaml")
fi

ldflags="-X $pkg.version=$version"
[[ -z "$commit" ]] || ldflags+=" -X $pkg.gitCommit=$commit"
[[ -z "$date" ]] || ldflags+=" -X $pkg.buildDate=$date"
echo "$ldflags"
