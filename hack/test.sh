#!/usr/bin/env bash
# test.sh runs every Tessera test on a fresh machine: it builds the pinned
# control plane and Helm (cached after the first run), checks that generated code is
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

step "Building Helm"
TESSERA_HELM=$(hack/build-helm.sh | tail -n 1)
export TESSERA_HELM

step "Verifying generated code"
hack/verify-codegen.sh

step "Vetting"
go vet ./...

step "Testing github.com/tessera-gpu/tessera"
go test -count=1 -timeout 30m ./...

# Nested modules keep heavy dependencies (k8s.io/kubernetes) out of the main
# go.mod: the tests under test/ and the kube-scheduler plugin.
for mod in $(find test scheduler -name go.mod -not -path '*/testdata/*' | sort); do
	dir=$(dirname "$mod")
	step "Testing $dir"
	(cd "$dir" && go vet ./... && go test -count=1 -timeout 30m ./...)
done
