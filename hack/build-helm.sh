#!/usr/bin/env bash
# build-helm.sh builds the Helm command pinned in hack/helm/go.mod from the Go
# module proxy into a cache that survives checkouts. It rebuilds only when the
# pin changes, and prints the path of the binary on its last line.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mod="$root/hack/helm"
# The cache key is the content of the pinning module: a new pin is a new
# directory, so a stale binary is never used.
key=$(cat "$mod/go.mod" "$mod/go.sum" | sha256sum | cut -c1-16)
bin="${TESSERA_HELM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tessera/helm}/$key"

if [[ ! -x "$bin/helm" ]]; then
	echo ">>> building helm (first time only; about 2 minutes on 2 cores)" >&2
	start=$SECONDS
	mkdir -p "$bin"
	# Helm's own release build stamps its version and the Kubernetes version
	# it assumes when no cluster is asked (helm template, helm lint) through
	# -X; without them it reports "v3.22" and renders for Kubernetes 1.20.
	# Both are read from the pinned module graph, so they follow the pin.
	cd "$mod"
	helm_version=$(go list -m -f '{{.Version}}' helm.sh/helm/v3)
	client_go=$(go list -m -f '{{.Version}}' k8s.io/client-go) # v0.MINOR.PATCH
	k8s_minor=$(echo "$client_go" | cut -d. -f2)
	ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version"
	for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
		ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
	done
	CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$bin/helm.tmp" helm.sh/helm/v3/cmd/helm
	mv "$bin/helm.tmp" "$bin/helm"
	echo ">>> built helm $helm_version in $((SECONDS - start))s" >&2
fi
echo "$bin/helm"
