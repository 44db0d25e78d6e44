package metrics

import (
	"bufio"
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

const namespace = "tessera"

const mib = 1 << 20

// State writes every GPU, GPU node and (when asked for) allocation in the
// view as series, as they are at scrape time, so a GPU or pod that is gone
// leaves no series behind. At 5,000 nodes of 8 GPUs these are some 400,000
// series, and 40,000 pods add as many again. They are written straight in the text format from a compact copy
// of the view, which allocates 40 MB a scrape at that size, instead of
// through a prometheus.Collector, whose metrics and the registry's copy of
// them allocate 400 MB (BenchmarkScrape).
type State struct {
	view *view.View
	opts StateOptions

	gpu              []gpuFamily
	heartbeat        family
	allocationMemory family
	allocationCores  family
	namespaces       namespaceFamilies
}

// gpuFamily is a per-GPU family and the device's value in it.
type gpuFamily struct {
	family
	value func(d *placement.Device) float64
}

// StateOptions choose which of the state's series are written.
type StateOptions struct {
	// Allocations adds a series per container and GPU it holds
	// (tessera_allocation_*). Off, the state is per GPU and node only:
	// kube-state-metrics already exports each pod's resource limits.
	Allocations bool
	// Quotas, when set, adds the series of each namespace's GPU quota
	// (tessera_namespace_*): what its pods hold and its hard limits.
	Quotas Quotas
}

// NewState returns the state of the view.
func NewState(v *view.View, opts StateOptions) *State {
	gpu := func(name, help string, value func(d *placement.Device) float64) gpuFamily {
		return gpuFamily{family{namespace + "_gpu_" + name, help, []string{"index", "model", "node", "uuid"}}, value}
	}
	allocation := func(name, help string) family {
		return family{namespace + "_allocation_" + name, help, []string{"container", "namespace", "pod", "uuid"}}
	}
	return &State{
		view: v,
		opts: opts,
		gpu: []gpuFamily{
			gpu("memory_capacity_bytes", "Memory of the GPU that may be allocated, after the device plugin's scaling.",
				func(d *placement.Device) float64 { return float64(d.MemoryMiB) * mib }),
			gpu("memory_allocated_bytes", "Memory of the GPU held by the pods placed on it.",
				func(d *placement.Device) float64 { return float64(d.UsedMemoryMiB) * mib }),
			gpu("cores_capacity", "Compute of the GPU that may be allocated, in percent of one GPU.",
				func(d *placement.Device) float64 { return float64(d.Cores) }),
			gpu("cores_allocated", "Compute of the GPU held by the pods placed on it, in percent of one GPU.",
				func(d *placement.Device) float64 { return float64(d.UsedCores) }),
			gpu("share_limit", "Number of containers that may share the GPU at once.",
				func(d *placement.Device) float64 { return float64(d.ShareLimit) }),
			gpu("shares_in_use", "Number of containers holding the GPU at once.",
				func(d *placement.Device) float64 { return float64(d.UsedShares) }),
			gpu("healthy", "1 when the GPU is healthy, 0 when it reported an error.",
				func(d *placement.Device) float64 { return boolValue(d.Healthy) }),
			gpu("cordoned", "1 when the administrator cordoned the GPU from new allocations.",
				func(d *placement.Device) float64 { return boolValue(d.Cordoned) }),
		},
		heartbeat: family{namespace + "_gpunode_heartbeat_timestamp_seconds",
			"Time the scheduler last saw the node's device plugin renew its Lease, its heartbeat, by the scheduler's clock, in seconds since the epoch.", []string{"node"}},
		allocationMemory: allocation("memory_bytes", "GPU memory given to a container on one GPU."),
		allocationCores:  allocation("cores", "Compute given to a container on one GPU, in percent of one GPU; 0 means no limit."),
		namespaces:       newNamespaceFamilies(),
	}
}

// snapshot is what the state writes, copied from the view.
type snapshot struct {
	gpus        []gpu
	heartbeats  []heartbeat
	allocations []allocation
	namespaces  []namespaceQuota
}

type gpu struct {
	node string
	placement.Device
}

type heartbeat struct {
	node string
	time time.Time
}

// allocation is one container's slice of one GPU.
type allocation struct {
	namespace, pod, container, uuid string
	memoryMiB                       int64
	cores                           int32
}

// snapshot copies the view under its lock, so that a slow scrape does not
// hold up binds. The strings are the view's own and are not copied.
func (s *State) snapshot() *snapshot {
	var out snapshot
	var podFn func(p *view.Pod)
	if s.opts.Allocations {
		podFn = func(p *view.Pod) {
			for _, ctr := range p.Containers {
				for _, d := range ctr.Devices {
					out.allocations = append(out.allocations, allocation{p.Namespace, p.Name, ctr.Name, d.UUID, d.MemoryMiB, d.Cores})
				}
			}
		}
	}
	s.view.Each(func(n *view.Node) {
		if renewed := n.Renewed(); !renewed.IsZero() && n.HasGPUNode {
			out.heartbeats = append(out.heartbeats, heartbeat{n.Placement.Name, renewed})
		}
		for _, d := range n.Placement.Devices {
			out.gpus = append(out.gpus, gpu{n.Placement.Name, d})
		}
	}, podFn)
	slices.SortStableFunc(out.gpus, func(a, b gpu) int { return cmp.Compare(a.node, b.node) })
	slices.SortFunc(out.heartbeats, func(a, b heartbeat) int { return cmp.Compare(a.node, b.node) })
	out.allocations = sumAllocations(out.allocations)
	if s.opts.Quotas != nil {
		out.namespaces = namespaceSnapshot(s.view, s.opts.Quotas)
	}
	return &out
}

// sumAllocations sorts the allocations and sums those with the same labels.
// Two pods of one name can hold GPUs for a moment (an orphaned allocation
// and its successor), and a scrape with a repeated series fails as a whole.
func sumAllocations(as []allocation) []allocation {
	slices.SortFunc(as, compareSeries)
	out := as[:0]
	for _, a := range as {
		if n := len(out); n > 0 && compareSeries(out[n-1], a) == 0 {
			out[n-1].memoryMiB += a.memoryMiB
			out[n-1].cores += a.cores
			continue
		}
		out = append(out, a)
	}
	return out
}

// compareSeries orders allocations by their labels.
func compareSeries(a, b allocation) int {
	return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.pod, b.pod),
		cmp.Compare(a.container, b.container), cmp.Compare(a.uuid, b.uuid))
}

// write writes the snapshot's series.
func (s *State) write(w *bufio.Writer, snap *snapshot) {
	var buf []byte
	if len(snap.gpus) > 0 {
		for i := range s.gpu {
			f := &s.gpu[i]
			f.header(w)
			for j := range snap.gpus {
				g := &snap.gpus[j]
				buf = f.sample(w, buf, f.value(&g.Device), strconv.Itoa(int(g.Index)), g.Model, g.node, g.UUID)
			}
		}
	}
	if len(snap.heartbeats) > 0 {
		s.heartbeat.header(w)
		for _, hb := range snap.heartbeats {
			buf = s.heartbeat.sample(w, buf, float64(hb.time.UnixNano())/1e9, hb.node)
		}
	}
	if len(snap.allocations) > 0 {
		s.allocationMemory.header(w)
		for _, a := range snap.allocations {
			buf = s.allocationMemory.sample(w, buf, float64(a.memoryMiB)*mib, a.container, a.namespace, a.pod, a.uuid)
		}
		s.allocationCores.header(w)
		for _, a := range snap.allocations {
			buf = s.allocationCores.sample(w, buf, float64(a.cores), a.container, a.namespace, a.pod, a.uuid)
		}
	}
	s.namespaces.write(w, buf, snap.namespaces)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
