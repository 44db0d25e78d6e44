#!/usr/bin/env bash
# build-scheduler.sh builds tessera-scheduler: kube-scheduler at the pinned
# Kubernetes version with Tessera's placement compiled in as a framework
# plugin (scheduler/plugin, a nested module that keeps k8s.io/kubernetes out
# of the main go.mod), from the Go module proxy, into a cache that survives
# checkouts. The cache key is the content of every Go source and module file
# it is built from and of this script, so a stale binary is never used. It
# prints the directory holding the binary on its last line.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# The plugin module compiles the main module's packages (through its
# replace directive) and its own; tests and other nested modules do not go in.
key=$( (git ls-files -co --exclude-standard -- '*.go' 'go.mod' 'go.sum' 'scheduler/plugin/go.mod' 'scheduler/plugin/go.sum' |
	grep -v -e '_test\.go$' -e '^test/' -e '^hack/' | sort | xargs cat; cat "${BASH_SOURCE[0]}") | sha256sum | cut -c1-16)
bin="${TESSERA_SCHEDULER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tessera/scheduler}/$key"

mkdir -p "$bin"
exec 9>"$bin/.lock"
flock 9
if [[ ! -x "$bin/tessera-scheduler" ]]; then
	echo ">>> building tessera-scheduler (kube-scheduler with the Tessera plugin; minutes on 2 cores)" >&2
	start=$SECONDS
	# Stamp the release version as Kubernetes' own build does (see
	# build-controlplane.sh), so that /version answers v1.37.2.
	version=$(cd scheduler/plugin && go list -m -f '{{.Version}}' k8s.io/kubernetes)
	minor=$(echo "$version" | cut -d. -f2)
	stamp="-X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1"
	stamp+=" -X k8s.io/component-base/version.gitMinor=$minor"
	(cd scheduler/plugin && CGO_ENABLED=0 go build -trimpath -ldflags="-s $stamp" -o "$bin/tessera-scheduler.tmp" ./cmd/tessera-scheduler)
	mv "$bin/tessera-scheduler.tmp" "$bin/tessera-scheduler"
	echo ">>> built tessera-scheduler in $((SECONDS - start))s" >&2
fi
echo "$bin"
