package dra

import (
	"strconv"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// DeviceName is the published name of a GPU: gpu-<index>, or for a MIG
// instance, which shares its GPU's index, gpu-<index>-mig-<GPU
// instance>-<compute instance>.
func DeviceName(g gpuv1alpha1.GPUDevice) string {
	name := "gpu-" + strconv.Itoa(int(g.Index))
	if g.MIG != nil {
		name += "-mig-" + strconv.Itoa(int(g.MIG.GPUInstanceID)) + "-" + strconv.Itoa(int(g.MIG.ComputeInstanceID))
	}
	return name
}
