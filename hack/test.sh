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
# Each failure is listed with the tests that failed and what the tests' own
# code said: a failing test prints the logs of every process it ran, which
# can bury its message deep in the output.
failed=()
summaries=$(mktemp -d)
trap 'rm -rf "$summaries"' EXIT
check() { # check NAME COMMAND...
	local name=$1 out="$summaries/${#failed[@]}.log"
	shift
	step "$name"
	if ! "$@" 2>&1 | tee "$out"; then
		failed+=("$name")
		echo "--- $name failed" >&2
		grep -E '^\s*--- FAIL|^\s+[A-Za-z0-9_]+_test\.go:[0-9]+: |^(FAIL|panic:)' "$out" | head -n 150 >"$out.summary" || true
	fi
	rm -f "$out"
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
	for i in "${!failed[@]}"; do
		echo "  ${failed[$i]}" >&2
		sed 's/^/    /' "$summaries/$i.log.summary" >&2
	done
	exit 1
fi
echo "=== All checks passed ($(date +%H:%M:%S))"
