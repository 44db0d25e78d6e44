package placement

import (
	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// Hold is what one pod holds on one GPU: for memory, cores and shares each,
// the most the pod's containers use at once over the pod's phases.
type Hold struct {
	// UUID is the GPU's UUID.
	UUID string
	// MemoryMiB is the pod's memory on the GPU.
	MemoryMiB int64
	// Cores is the pod's compute on the GPU.
	Cores int32
	// Shares is the number of the pod's containers on the GPU at once.
	Shares int32
	// Slices are the memory slices of the MIG instances made on demand
	// for the pod on the GPU, over all its phases: an instance lives as
	// long as the pod.
	Slices uint16
}

// Holds returns the per-GPU holds of an allocation, one per GPU in order of
// first use. The containers are in the kubelet's order, and run in phases:
// each Init container runs alone beside the Sidecars listed before it; then
// all Sidecars and App containers run together. A container of any other
// kind is taken to run for the pod's life, which holds the most.
func Holds(containers []gpuv1alpha1.ContainerAllocation) []Hold {
	var holds []Hold
	for i := range containers {
		for _, d := range containers[i].Devices {
			k := holdIndex(holds, d.UUID)
			if k < 0 {
				k = len(holds)
				holds = append(holds, Hold{UUID: d.UUID})
			}
			if d.MIG != nil {
				holds[k].Slices |= d.MIG.Placement.Slices()
			}
		}
	}
	// The long-running phase: every container that is not an Init container.
	phase := make([]Hold, len(holds))
	for i := range containers {
		if containers[i].Kind != gpuv1alpha1.ContainerInit {
			addContainer(phase, holds, &containers[i])
		}
	}
	raise(holds, phase)
	// One phase per Init container, with the Sidecars started before it.
	for i := range containers {
		if containers[i].Kind != gpuv1alpha1.ContainerInit {
			continue
		}
		clear(phase)
		for j := range i {
			if containers[j].Kind == gpuv1alpha1.ContainerSidecar {
				addContainer(phase, holds, &containers[j])
			}
		}
		addContainer(phase, holds, &containers[i])
		raise(holds, phase)
	}
	return holds
}

// addContainer adds one container's use to a phase; phase[k] is the GPU of holds[k].
func addContainer(phase, holds []Hold, c *gpuv1alpha1.ContainerAllocation) {
	for _, d := range c.Devices {
		k := holdIndex(holds, d.UUID)
		phase[k].MemoryMiB += d.MemoryMiB
		phase[k].Cores += d.Cores
		phase[k].Shares++
	}
}

// raise lifts each hold to at least the phase's use.
func raise(holds, phase []Hold) {
	for k := range holds {
		holds[k].MemoryMiB = max(holds[k].MemoryMiB, phase[k].MemoryMiB)
		holds[k].Cores = max(holds[k].Cores, phase[k].Cores)
		holds[k].Shares = max(holds[k].Shares, phase[k].Shares)
	}
}

func holdIndex(holds []Hold, uuid string) int {
	for k := range holds {
		if holds[k].UUID == uuid {
			return k
		}
	}
	return -1
}
