#!/usr/bin/env bash
# test.sh runs every Tessera test on a fresh machine: it builds the pinned
# control plane, Kueue and Helm (cached after the first run), checks that generated code is
# current, vets, and runs unit, integration and end-to-end tests of every Go
# module in the tree against real etcd, kube-apiserver, kube-scheduler and
# kube-controller-manager.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=hack/lib/cgo.sh
source hack/lib/cgo.sh

step() { echo; echo "=== $* ($(date +%H:%M:%S))"; }

step "Building the control plane"
TESSERA_CONTROLPLANE_BIN=$(hack/build-controlplane.sh | tail -n 1)
export TESSERA_CONTROLPLANE_BIN

step "Building tessera-scheduler"
TESSERA_SCHEDULER_BIN=$(hack/build-scheduler.sh | tail -n 1)
export TESSERA_SCHEDULER_BIN

step "Building Kueue"
TESSERA_KUEUE_BIN=$(hack/build-kueue.sh | tail -n 1)
export TESSERA_KUEUE_BIN

step "Building Helm"
TESSERA_HELM=$(hack/build-helm.sh | tail -n 1)
export TESSERA_HELM

# A failing check does not stop the others: every module is tested, and all
# failures are listed at the end, so one flaky package cannot hide another.
failed=()
check() { # check NAME COMMAND...
	local name=$1
	shift
	step "$name"
	if ! "$@"; then
		failed+=("$name")
		echo "--- $name failed" >&2
	fi
}

check "Verifying generated code" hack/verify-codegen.sh
check "Vetting github.com/tessera-gpu/tessera" go vet ./...
check "Testing github.com/tessera-gpu/tessera" go test -count=1 -timeout 30m ./...

# Nested modules keep heavy dependencies (k8s.io/kubernetes) out of the main
# go.mod: the tests under test/ and the kube-scheduler plugin.
for mod in $(find test scheduler -name go.mod -not -path '*/testdata/*' | sort); do
	dir=$(dirname "$mod")
	check "Vetting $dir" bash -c "cd '$dir' && go vet ./..."
	check "Testing $dir" bash -c "cd '$dir' && go test -count=1 -timeout 30m ./..."
done

echo
if ((${#failed[@]} > 0)); then
	echo "=== FAILED ($(date +%H:%M:%S)): ${#failed[@]} step(s)" >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "=== All checks passed ($(date +%H:%M:%S))"
