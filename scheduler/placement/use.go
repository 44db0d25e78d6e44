package placement

import (
	"math/bits"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// Use is what a pod takes of its namespace's GPU quota, counted as the
// quota's resources are (apis/gpu/v1alpha1, QuotaMemory, QuotaCores,
// QuotaGPUs): the memory it is given on each GPU, summed; its compute in
// percent of one GPU, summed, a GPU had alone counting 100; and its GPUs.
// Containers add up by Kubernetes' rule for a pod's requests: the larger
// of the long-running containers together (App and Sidecar) and of each
// Init container beside the Sidecars started before it, each resource on
// its own.
type Use struct {
	MemoryMiB int64
	Cores     int64
	GPUs      int64
}

// Add returns u and o together.
func (u Use) Add(o Use) Use {
	return Use{MemoryMiB: u.MemoryMiB + o.MemoryMiB, Cores: u.Cores + o.Cores, GPUs: u.GPUs + o.GPUs}
}

// Sub returns u without o.
func (u Use) Sub(o Use) Use {
	return Use{MemoryMiB: u.MemoryMiB - o.MemoryMiB, Cores: u.Cores - o.Cores, GPUs: u.GPUs - o.GPUs}
}

// IsZero reports whether u takes nothing.
func (u Use) IsZero() bool { return u == Use{} }

// Max returns, resource by resource, the larger of u and o.
func (u Use) Max(o Use) Use {
	return Use{MemoryMiB: max(u.MemoryMiB, o.MemoryMiB), Cores: max(u.Cores, o.Cores), GPUs: max(u.GPUs, o.GPUs)}
}

// Min returns, resource by resource, the smaller of u and o.
func (u Use) Min(o Use) Use {
	return Use{MemoryMiB: min(u.MemoryMiB, o.MemoryMiB), Cores: min(u.Cores, o.Cores), GPUs: min(u.GPUs, o.GPUs)}
}

// podUse adds up count containers by Kubernetes' rule; kind and use give
// each container's kind and use.
func podUse(count int, kind func(c int) gpuv1alpha1.ContainerKind, use func(c int) Use) Use {
	var longRunning, sidecars, peak Use
	for c := range count {
		u := use(c)
		switch kind(c) {
		case gpuv1alpha1.ContainerInit:
			peak = peak.Max(sidecars.Add(u))
		case gpuv1alpha1.ContainerSidecar:
			sidecars = sidecars.Add(u)
			longRunning = longRunning.Add(u)
		default:
			longRunning = longRunning.Add(u)
		}
	}
	return longRunning.Max(peak)
}

// quotaCores is the compute in percent of one GPU that a container given
// memoryMiB and cores of device d counts: 100 for a GPU it has alone (a
// MIG instance, all of the device's cores, or all of its memory with no
// limit on cores), else its cores. d is nil for a GPU the scheduler does
// not know (its node has no GPUNode): then only cores of 100 or more
// count as the whole GPU.
func quotaCores(memoryMiB int64, cores int32, d *Device) int64 {
	switch {
	case d == nil:
		if cores >= gpurequest.MaxPercent {
			return gpurequest.MaxPercent
		}
	case d.MIGProfile != "", d.Cores > 0 && cores >= d.Cores, cores == 0 && memoryMiB >= d.MemoryMiB:
		return gpurequest.MaxPercent
	}
	return int64(cores)
}

// DeviceUse is what one GPU given to a container takes of its
// namespace's quota, the container being given memoryMiB and cores of
// device d (nil for a GPU the scheduler does not know; see quotaCores).
func DeviceUse(memoryMiB int64, cores int32, d *Device) Use {
	return Use{MemoryMiB: memoryMiB, Cores: quotaCores(memoryMiB, cores, d), GPUs: 1}
}

// UseOf is what an allocation on node n takes of its namespace's quota.
// Devices n does not have, all of them when n is nil, count by their
// cores alone (see quotaCores).
func UseOf(containers []gpuv1alpha1.ContainerAllocation, n *Node) Use {
	return podUse(len(containers),
		func(c int) gpuv1alpha1.ContainerKind { return containers[c].Kind },
		func(c int) Use {
			var u Use
			for _, d := range containers[c].Devices {
				var device *Device
				if n != nil {
					device = n.device(d.UUID)
				}
				u = u.Add(DeviceUse(d.MemoryMiB, d.Cores, device))
			}
			return u
		})
}

// LeastUse is the least the request takes of its namespace's quota on any
// GPUs: each container's quota totals as admission counts them
// (gpurequest.ContainerRequest.QuotaTotals), in which a percentage of
// memory or a whole GPU counts no memory, which only the GPU it gets
// decides. What UseOf counts of any placement of the request is at least
// as much, resource by resource.
func LeastUse(req *Request) Use {
	return podUse(len(req.Containers),
		func(c int) gpuv1alpha1.ContainerKind { return req.Containers[c].Kind },
		func(c int) Use {
			t := req.Containers[c].QuotaTotals()
			return Use{MemoryMiB: t.MemoryMiB, Cores: t.Cores, GPUs: t.GPUs}
		})
}

// Use places the request on the node as Fit would, and returns what that
// placement takes of the namespace's quota, as UseOf would count its
// assignment; ok is false when the request does not fit. Like Feasible it
// allocates nothing.
func (ft *Fitter) Use(node *Node, req *Request) (u Use, ok bool) {
	e := &ft.e
	if !e.place(node, req, true) {
		return Use{}, false
	}
	return podUse(len(req.Containers),
		func(c int) gpuv1alpha1.ContainerKind { return req.Containers[c].Kind },
		func(c int) Use {
			var u Use
			cr := &req.Containers[c]
			for m := e.chosen[c]; m != 0; m &= m - 1 {
				d := &node.Devices[bits.TrailingZeros64(m)]
				u = u.Add(DeviceUse(memoryOn(cr, d), coresOn(cr, d), d))
			}
			return u
		}), true
}
