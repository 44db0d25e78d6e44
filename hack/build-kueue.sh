#!/usr/bin/env bash
# build-kueue.sh builds Kueue's controller manager at the version pinned in
# hack/kueue from the Go module proxy, and copies the CRDs and webhook
# configurations shipped in the same module beside it, into a cache that
# survives checkouts. It rebuilds only when the pin changes, and prints the
# directory holding kueue-manager and config/ on its last line.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The cache key is the content of the pinning module and of this script
# (which sets the build flags): a new pin is a new directory, so a stale
# binary is never used.
key=$(cat "$root/hack/kueue/go.mod" "$root/hack/kueue/go.sum" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)
bin="${TESSERA_KUEUE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tessera/kueue}/$key"

mkdir -p "$bin"
# Tests started side by side may all ask at once: build one at a time.
exec 9>"$bin/.lock"
flock 9
if [[ ! -x "$bin/kueue-manager" ]]; then
	echo ">>> building kueue-manager (first time only; several minutes on 2 cores)" >&2
	start=$SECONDS
	cd "$root/hack/kueue"
	version=$(go list -m -f '{{.Version}}' sigs.k8s.io/kueue)
	CGO_ENABLED=0 go build -trimpath -ldflags="-s -X sigs.k8s.io/kueue/pkg/version.GitVersion=$version" \
		-o "$bin/kueue-manager.tmp" sigs.k8s.io/kueue/cmd/kueue
	# The manifests come from the module that was just built, so the CRDs
	# always match the manager that serves them.
	module=$(go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)
	rm -rf "$bin/config.tmp"
	mkdir -p "$bin/config.tmp"
	cp -R "$module/config/components/crd" "$module/config/components/webhook" "$bin/config.tmp/"
	chmod -R u+w "$bin/config.tmp"
	rm -rf "$bin/config"
	mv "$bin/config.tmp" "$bin/config"
	mv "$bin/kueue-manager.tmp" "$bin/kueue-manager"
	echo ">>> built kueue-manager $version in $((SECONDS - start))s" >&2
fi
echo "$bin"
