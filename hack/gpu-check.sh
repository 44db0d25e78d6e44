#!/usr/bin/env bash
# gpu-check.sh runs the device plugin's NVML backend against this machine's
# real NVIDIA driver: discovery (GPUs and MIG instances as the plugin would
# publish them), what NVML measures of each, and the health watch, printing
# what it found (hack/gpucheck). On a GPU already in MIG mode with no
# instances it also makes and destroys one MIG instance through NVML, as the
# plugin does with dynamicMIG; it never changes a GPU's MIG mode, and says
# "dynamic MIG: SKIPPED" with the reason when no GPU qualifies. Then it runs nvmlgpu's real-driver test with
# the driver required (TESSERA_NVML_TEST=1), so that its checks cannot skip.
# Run it on a machine with an NVIDIA GPU; elsewhere it says that the driver
# is missing and exits non-zero. Arguments go to gpucheck (--watch=30s).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
echo ">>> NVML backend against the real driver"
go run ./hack/gpucheck "$@"
echo ">>> nvmlgpu's real-driver test, driver required"
TESSERA_NVML_TEST=1 go test -count=1 -v -run TestNVMLOnThisNode ./deviceplugin/gpu/nvmlgpu/
