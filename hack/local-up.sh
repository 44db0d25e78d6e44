#!/usr/bin/env bash
# local-up.sh runs Tessera end to end on this machine, with no GPU and no
# container runtime: a real etcd, kube-apiserver, kube-controller-manager and
# kube-scheduler; Tessera's scheduler extender, admission webhook and device
# plugins; three simulated GPU nodes whose kubelet part is played by a node
# agent. It applies the pods in deploy/examples and prints where each landed,
# on which GPU, with what slice, then the kubeconfig and metrics addresses.
# Ctrl-C stops everything.
#
# --mode=dra runs the same nodes through DRA instead: tessera-scheduler
# (no extender) whose DynamicResources plugin allocates the ResourceSlices
# that the node daemons publish as DRA driver gpu.tessera.dev, ranked by
# Tessera's node policy score (--scheduler=stock: stock kube-scheduler,
# first fit), the webhook turning HAMi-style pods into claims, the
# resourceclaim controller, node agents that prepare each pod's claims over
# the daemons' DRA sockets, and the claims in deploy/examples/dra.
#
# Flags are passed to hack/localup (go run ./hack/localup --help), e.g.
# --exit-after-demo to stop once the examples are placed, or
# --scheduler=plugin to schedule with tessera-scheduler (kube-scheduler with
# the Tessera plugin, which can preempt GPU slices) instead of kube-scheduler
# and the extender, with Kubernetes' Workload API on in every control-plane
# process, so that a PodGroup (deploy/examples/gangs) is placed all or nothing.
#
# --kueue also runs Kueue (built from the module proxy by
# hack/build-kueue.sh, cached) with two example teams' queues from
# deploy/examples/kueue, and submits an example Job to each.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=hack/lib/cgo.sh
source hack/lib/cgo.sh

echo ">>> Building the control plane (cached after the first run; the first takes 7 to 16 minutes on 2 cores)"
TESSERA_CONTROLPLANE_BIN=$(hack/build-controlplane.sh | tail -n 1)
export TESSERA_CONTROLPLANE_BIN

# tessera-scheduler schedules with --scheduler=plugin, and in DRA mode
# unless --scheduler=stock.
tessera_scheduler=false
for arg in "$@"; do
	case "$arg" in
	--scheduler=plugin | --mode=dra) tessera_scheduler=true ;;
	esac
done
if [[ " $* " == *" --scheduler=stock "* ]]; then
	tessera_scheduler=false
fi
if [[ "$tessera_scheduler" == true ]]; then
	echo ">>> Building tessera-scheduler (cached after the first run)"
	TESSERA_SCHEDULER_BIN=$(hack/build-scheduler.sh | tail -n 1)
	export TESSERA_SCHEDULER_BIN
fi
for arg in "$@"; do
	if [[ "$arg" == "--kueue" ]]; then
		echo ">>> Building Kueue (cached after the first run)"
		TESSERA_KUEUE_BIN=$(hack/build-kueue.sh | tail -n 1)
		export TESSERA_KUEUE_BIN
	fi
done

echo ">>> Building Tessera"
mkdir -p _output/bin
# Stamped as the image's are (hack/version.sh): --version and
# tessera_build_info name the commit the cluster runs.
go build -ldflags "$(hack/version.sh)" -o _output/bin/ ./scheduler ./webhook ./deviceplugin ./hack/localup

exec _output/bin/localup --bin-dir _output/bin --state-dir _output/local-up "$@"
