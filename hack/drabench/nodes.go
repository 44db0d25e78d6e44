package drabench

import (
	"fmt"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

// Each node has hack/bench's simulated GPUs: eight 80 GiB A100s, each
// shared by at most ten containers.
const (
	gpusPerNode  = 8
	gpuModel     = "NVIDIA A100-SXM4-80GB"
	gpuMemoryMiB = 81920
	splitCount   = 10
)

// nodeName is the name of the i-th node, padded so that names sort as the
// nodes are numbered.
func nodeName(i int) string { return fmt.Sprintf("node-%05d", i) }

// nodeGPUs are the node's GPUs as the daemon's NVML layer reports them.
func nodeGPUs(node string) []gpu.Device {
	out := make([]gpu.Device, gpusPerNode)
	for i := range out {
		out[i] = gpu.Device{
			UUID:      "GPU-" + node + "-" + strconv.Itoa(i),
			Index:     i,
			Model:     gpuModel,
			MemoryMiB: gpuMemoryMiB,
			NUMANode:  i / (gpusPerNode / 2),
			Health:    gpu.Health{Healthy: true},
		}
	}
	return out
}

// resourceSlices are the ResourceSlice objects the kubelet plugin helper
// writes for a node's resources: one per slice, in the node's pool.
func resourceSlices(node string, res resourceslice.DriverResources) []*resourceapi.ResourceSlice {
	pool := res.Pools[node]
	out := make([]*resourceapi.ResourceSlice, len(pool.Slices))
	for i, s := range pool.Slices {
		out[i] = &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: node + "-" + gpuv1alpha1.DRADriverName + "-" + strconv.Itoa(i)},
			Spec: resourceapi.ResourceSliceSpec{
				Driver:         gpuv1alpha1.DRADriverName,
				NodeName:       ptr.To(node),
				Pool:           resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: int64(len(pool.Slices))},
				Devices:        s.Devices,
				SharedCounters: s.SharedCounters,
			},
		}
	}
	return out
}
