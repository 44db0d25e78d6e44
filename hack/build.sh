#!/usr/bin/env bash
# build.sh builds Tessera's three daemons (and tessera-scheduler, see below), stamped with their version
# (hack/version.sh), into the directory it is given, for GOOS/GOARCH
# (default: this machine's). The Dockerfile runs it for each platform of a
# multi-arch image; hack/local-up.sh and the chart's tests build the same way.
#
#   hack/build.sh _output/bin                 # this machine
#   GOARCH=arm64 hack/build.sh _output/arm64  # Grace Hopper and other arm64 nodes
#
# The extender and the webhook are static (CGO_ENABLED=0) and cross-compile
# with GOARCH alone. The device plugin needs cgo, because go-nvml loads the
# driver's libnvidia-ml.so with dlopen at run time; for another
# architecture it needs that architecture's C cross compiler, found as
# <triplet>-gcc (Debian: apt-get install gcc-aarch64-linux-gnu
# libc6-dev-arm64-cross for arm64, gcc-x86-64-linux-gnu
# libc6-dev-amd64-cross for amd64), or named by CC.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:?usage: hack/build.sh OUTPUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$root"

goos=${GOOS:-$(go env GOHOSTOS)}
goarch=${GOARCH:-$(go env GOHOSTARCH)}
export GOOS=$goos GOARCH=$goarch
ldflags="-s $(hack/version.sh)"

CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$out/tessera-extender" ./scheduler
CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$out/tessera-webhook" ./webhook
# tessera-scheduler (plugin mode) is a nested module that compiles
# kube-scheduler, minutes on a laptop: built only with
# TESSERA_BUILD_SCHEDULER=true, as the Dockerfile sets; hack/build-scheduler.sh
# builds and caches it for tests and the local cluster.
if [[ "${TESSERA_BUILD_SCHEDULER:-false}" == true ]]; then
	(cd scheduler/plugin && CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$out/tessera-scheduler" ./cmd/tessera-scheduler)
fi

cc=${CC:-}
if [[ -z "$cc" && "$goarch" != "$(go env GOHOSTARCH)" ]]; then
	case "$goarch" in
	amd64) cc=x86_64-linux-gnu-gcc ;;
	arm64) cc=aarch64-linux-gnu-gcc ;;
	*)
		echo "hack/build.sh: no C cross compiler known for GOARCH=$goarch; set CC" >&2
		exit 1
		;;
	esac
	if ! command -v "$cc" >/dev/null; then
		echo "hack/build.sh: the device plugin needs cgo, and $cc is not installed (see the top of hack/build.sh)" >&2
		exit 1
	fi
fi
# shellcheck source=hack/lib/cgo.sh
source hack/lib/cgo.sh
CGO_ENABLED=1 CC=${cc:-$(go env CC)} go build -trimpath -ldflags="$ldflags" -o "$out/tessera-device-plugin" ./deviceplugin
