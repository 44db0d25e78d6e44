package rows

import (
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

// podTimeline is when the steps of one pod's bind by Tessera happened.
type podTimeline struct {
	node string
	// allocationCreate is when the extender's create of the GPUAllocation
	// reached the API server; bound when its binding completed there.
	allocationCreate, bound time.Time
	// allocated is when the simulated kubelet had marked the allocation Allocated.
	allocated time.Time
}

// BindCycle is where the time goes between two binds to one node, which
// the one-pod-in-flight rule serialises: the extender's writes for a pod,
// the (simulated) kubelet serving it, and the handoff to the next bind
// waiting for that node.
type BindCycle struct {
	// Writes is from the allocation's create reaching the API server to
	// the binding completing: create, anything else the extender writes
	// before binding, and the binding.
	Writes meter.Quantiles
	// Kubelet is from the binding completing to the allocation being Allocated.
	Kubelet meter.Quantiles
	// Handoff is from Allocated to the next allocation on the node being
	// created: the extender's watch seeing it, its gate letting the next
	// bind go, and that bind's own work before its create. It counts only
	// pairs where the next pod was bound within a second after, so that a
	// node left idle does not count.
	Handoff meter.Quantiles
}

// bindCycle computes the cycle from the pods' timelines; pods missing a
// step are left out of the steps they miss.
func bindCycle(pods map[string]*podTimeline) BindCycle {
	var writes, kubelet, handoff []time.Duration
	byNode := map[string][]*podTimeline{}
	for _, p := range pods {
		if !p.allocationCreate.IsZero() && !p.bound.IsZero() {
			writes = append(writes, p.bound.Sub(p.allocationCreate))
		}
		if !p.bound.IsZero() && !p.allocated.IsZero() {
			kubelet = append(kubelet, p.allocated.Sub(p.bound))
		}
		if p.node != "" && !p.allocationCreate.IsZero() {
			byNode[p.node] = append(byNode[p.node], p)
		}
	}
	for _, list := range byNode {
		sort.Slice(list, func(i, j int) bool { return list[i].allocationCreate.Before(list[j].allocationCreate) })
		for i := 1; i < len(list); i++ {
			prev, next := list[i-1], list[i]
			if prev.allocated.IsZero() || next.allocationCreate.Before(prev.allocated) {
				continue
			}
			if gap := next.allocationCreate.Sub(prev.allocated); gap <= time.Second {
				handoff = append(handoff, gap)
			}
		}
	}
	return BindCycle{Writes: meter.SampleQuantiles(writes), Kubelet: meter.SampleQuantiles(kubelet), Handoff: meter.SampleQuantiles(handoff)}
}

// String says the cycle's medians and 99th percentiles.
func (c BindCycle) String() string {
	q := func(x meter.Quantiles) string {
		return harness.FormatDuration(x.P50, x.Count) + " / " + harness.FormatDuration(x.P99, x.Count)
	}
	return fmt.Sprintf("extender writes %s, simulated kubelet %s, handoff to the node's next bind %s (p50 / p99)",
		q(c.Writes), q(c.Kubelet), q(c.Handoff))
}

// timelinesFromAudit fills the extender's steps of each pod's timeline
// from the completed requests in the audit log.
func timelinesFromAudit(path, user string, pods map[string]*podTimeline) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading the audit log: %w", err)
	}
	defer func() { _ = f.Close() }()
	get := func(name string) *podTimeline {
		p, ok := pods[name]
		if !ok {
			p = &podTimeline{}
			pods[name] = p
		}
		return p
	}
	return meter.ReadAudit(f, user, func(e *meter.AuditEvent) {
		if e.Stage != "ResponseComplete" || e.Verb != "create" || e.ObjectRef == nil || e.ObjectRef.Name == "" {
			return
		}
		switch {
		case e.ObjectRef.Resource == "gpuallocations" && e.ObjectRef.Subresource == "":
			get(e.ObjectRef.Name).allocationCreate = e.RequestReceived
		case e.ObjectRef.Resource == "pods" && e.ObjectRef.Subresource == "binding":
			get(e.ObjectRef.Name).bound = e.StageTimestamp
		}
	})
}
