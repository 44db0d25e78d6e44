package admission

import (
	corev1 "k8s.io/api/core/v1"
)

// gpuUse says which of Tessera's resources a container names, in its limits
// or its requests, as gpurequest reads them: a gpucores of 0 is not named.
type gpuUse struct {
	// count is set when the container names the GPU count.
	count bool
	// slice is set when the container names memory, a memory percentage or cores.
	slice bool
	// zeroCount is set when the count is named and is exactly zero.
	zeroCount bool
}

// asks reports whether the container asks Tessera for GPUs. A count of zero
// with nothing else is the Kubernetes way of asking for no GPU (charts often
// template "nvidia.com/gpu: 0"), so it is not a request: the webhook leaves
// such a container, and a pod of only such containers, alone.
func (u gpuUse) asks() bool {
	return u.slice || (u.count && !u.zeroCount)
}

func (a *Admitter) useOf(c *corev1.Container) gpuUse {
	names := a.cfg.ResourceNames
	var u gpuUse
	if q, ok := names.Lookup(c, names.Count); ok {
		u.count = true
		u.zeroCount = q.IsZero()
	}
	for _, name := range []corev1.ResourceName{names.Memory, names.MemoryPercentage, names.Cores} {
		if _, ok := names.Lookup(c, name); ok {
			u.slice = true
		}
	}
	return u
}

// podAsks reports whether any container of the pod spec asks Tessera for
// GPUs.
func (a *Admitter) podAsks(spec *corev1.PodSpec) bool {
	for i := range spec.InitContainers {
		if a.useOf(&spec.InitContainers[i]).asks() {
			return true
		}
	}
	for i := range spec.Containers {
		if a.useOf(&spec.Containers[i]).asks() {
			return true
		}
	}
	return false
}
