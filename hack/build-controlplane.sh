#!/usr/bin/env bash
# build-controlplane.sh builds etcd, kube-apiserver, kube-controller-manager
# and kube-scheduler at the pinned versions from the Go module proxy, into a
# cache that survives checkouts. It rebuilds only when a pinned version
# changes, and prints the directory holding the binaries on its last line.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The cache key is the content of the two pinning modules and of this script
# (which sets the build flags): a new pin is a new directory, so a stale
# binary is never used.
key=$(cat "$root/hack/controlplane/go.mod" "$root/hack/controlplane/go.sum" \
	"$root/hack/etcd/go.mod" "$root/hack/etcd/go.sum" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)
bin="${TESSERA_CONTROLPLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tessera/controlplane}/$key"

build() { # build MODULE_DIR PACKAGE NAME [LDFLAGS]
	if [[ -x "$bin/$3" ]]; then
		return
	fi
	echo ">>> building $3 (first time only; kube-* take several minutes on 2 cores)" >&2
	local start=$SECONDS
	(cd "$root/hack/$1" && CGO_ENABLED=0 go build -trimpath -ldflags="-s ${4:-}" -o "$bin/$3.tmp" "$2")
	mv "$bin/$3.tmp" "$bin/$3"
	echo ">>> built $3 in $((SECONDS - start))s" >&2
}

# Stamp the release version as Kubernetes' own build does, so that /version
# answers v1.37.2 rather than v0.0.0-master (Helm and clients check it).
version=$(cd "$root/hack/controlplane" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=$(echo "$version" | cut -d. -f2)
stamp="-X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1"
stamp+=" -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/client-go/pkg/version.gitVersion=$version"
stamp+=" -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"

mkdir -p "$bin"
# Tests started side by side may all ask at once: build one at a time.
exec 9>"$bin/.lock"
flock 9
build etcd go.etcd.io/etcd/server/v3 etcd
build controlplane k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver "$stamp"
build controlplane k8s.io/kubernetes/cmd/kube-scheduler kube-scheduler "$stamp"
build controlplane k8s.io/kubernetes/cmd/kube-controller-manager kube-controller-manager "$stamp"
echo "$bin"
