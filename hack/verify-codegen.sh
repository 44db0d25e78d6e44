#!/usr/bin/env bash
# verify-codegen.sh fails when generated code or CRD manifests are stale:
# it regenerates into a scratch copy of the tree and compares.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Copy the tree without VCS data or build output; generation runs in the copy.
tar -C "$root" --exclude=.git --exclude=_output -cf - . | tar -C "$scratch" -xf -
if ! out=$(TESSERA_CODEGEN_ROOT="$scratch" "$root/hack/update-codegen.sh" 2>&1); then
	echo "$out" >&2
	echo "ERROR: hack/update-codegen.sh failed on a copy of the tree (output above)." >&2
	exit 1
fi

stale=0
for dir in apis generated deploy/crds deploy/helm/tessera/files/crds; do
	if ! diff -ruN "$root/$dir" "$scratch/$dir"; then
		stale=1
	fi
done
if [[ $stale -ne 0 ]]; then
	echo >&2
	echo "ERROR: generated code is out of date with apis/ (diff above)." >&2
	echo "Run hack/update-codegen.sh and commit the result." >&2
	exit 1
fi
echo "Generated code is up to date."
