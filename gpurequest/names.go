package gpurequest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// ResourceNames are the extended resource names under which containers ask
// for GPU slices. The defaults are the names HAMi and NVIDIA users already
// write, so their pod specs work unchanged.
type ResourceNames struct {
	// Count is the number of GPUs, such as nvidia.com/gpu.
	Count corev1.ResourceName `json:"count"`
	// Memory is the GPU memory in MiB on each GPU.
	Memory corev1.ResourceName `json:"memory"`
	// MemoryPercentage is the GPU memory as a percentage of each GPU's memory.
	MemoryPercentage corev1.ResourceName `json:"memoryPercentage"`
	// Cores is the share of each GPU's compute, in percent.
	Cores corev1.ResourceName `json:"cores"`
}

// DefaultResourceNames returns the resource names HAMi uses.
func DefaultResourceNames() ResourceNames {
	return ResourceNames{
		Count:            "nvidia.com/gpu",
		Memory:           "nvidia.com/gpumem",
		MemoryPercentage: "nvidia.com/gpumem-percentage",
		Cores:            "nvidia.com/gpucores",
	}
}

// All returns the names in a fixed order: count, memory, percentage, cores.
func (n ResourceNames) All() []corev1.ResourceName {
	return []corev1.ResourceName{n.Count, n.Memory, n.MemoryPercentage, n.Cores}
}

// Validate reports an empty or repeated name.
func (n ResourceNames) Validate() error {
	seen := map[corev1.ResourceName]bool{}
	for _, name := range n.All() {
		if name == "" {
			return fmt.Errorf("resource names: every name must be set, got %+v", n)
		}
		if seen[name] {
			return fmt.Errorf("resource names: %q is used twice", name)
		}
		seen[name] = true
	}
	return nil
}
