package fault

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/test/nodeagent"
)

// overCommitted names every GPU whose live pods' allocations hold more
// memory, cores or shares than it has, and every allocation of a GPU its
// node does not have; in DRA mode every device whose allocated claims
// consume more than its ResourceSlice offers, whether their pods live or
// not, as kube-scheduler counts them.
func (s *state) overCommitted() []string {
	if s.dra {
		return framework.OverCapacity(s.slices, s.claims)
	}
	out := framework.OverCommitted(s.nodes, s.used())
	if len(out) == 0 {
		return nil
	}
	// Name what holds each GPU, for whoever reads the failure.
	holders := map[string][]string{}
	s.eachHolding(func(a *gpuv1alpha1.GPUAllocation, pod *corev1.Pod) {
		where := "unbound"
		if pod.Spec.NodeName != "" {
			where = "bound to " + pod.Spec.NodeName
		}
		for _, h := range placement.Holds(a.Spec.Containers) {
			holders[h.UUID] = append(holders[h.UUID], fmt.Sprintf("%s (pod %s %s; allocation on %s, %q, created %s)",
				a.Name, pod.UID, where, a.Spec.NodeName, a.Status.Phase, a.CreationTimestamp.Format("15:04:05")))
		}
	})
	for i, v := range out {
		// The message names the GPU as a word of its own.
		for _, word := range strings.Fields(v) {
			if held, ok := holders[strings.TrimSuffix(word, ",")]; ok {
				out[i] = v + ", held by " + strings.Join(held, "; ")
				break
			}
		}
	}
	return out
}

// orphanedAllocations returns, by UID, every allocation (in DRA mode,
// claim) whose pod is gone or is another pod, with what a person needs
// to find it.
func (s *state) orphanedAllocations() map[types.UID]string {
	if s.dra {
		return s.orphanedClaims()
	}
	pods := map[string]*corev1.Pod{}
	for i := range s.pods {
		pods[s.pods[i].Name] = &s.pods[i]
	}
	out := map[types.UID]string{}
	for _, a := range s.allocations {
		if p, ok := pods[a.Name]; !ok || p.UID != a.Spec.PodUID {
			out[a.UID] = fmt.Sprintf("allocation %s (node %s, phase %q)", a.Name, a.Spec.NodeName, a.Status.Phase)
		}
	}
	return out
}

// misallocated names every bound pod that lacks exactly its own allocation
// on its node, every running pod whose allocation was not served, and every
// pod the node agents saw served other GPUs than its allocation's. Read it
// only while no pod is being deleted: a pod listed a moment before its
// deletion has lost its allocation by the time it is read.
func (s *state) misallocated(agents []*nodeagent.Agent) []string {
	allocs := map[string]*gpuv1alpha1.GPUAllocation{}
	for i := range s.allocations {
		allocs[s.allocations[i].Name] = &s.allocations[i]
	}
	var out []string
	for _, p := range s.live() {
		if p.Spec.NodeName == "" {
			continue
		}
		a, ok := allocs[p.Name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("bound pod %s has no allocation", p.Name))
			continue
		case a.Spec.PodUID != p.UID || a.Spec.NodeName != p.Spec.NodeName:
			out = append(out, fmt.Sprintf("pod %s (%s on %s) has the allocation of pod %s on %s", p.Name, p.UID, p.Spec.NodeName, a.Spec.PodUID, a.Spec.NodeName))
			continue
		case p.Status.Phase == corev1.PodRunning && a.Status.Phase != gpuv1alpha1.AllocationAllocated:
			out = append(out, fmt.Sprintf("pod %s runs but its allocation is %q: %s", p.Name, a.Status.Phase, a.Status.Message))
		}
		for _, agent := range agents {
			if agent.NodeName != p.Spec.NodeName {
				continue
			}
			for _, r := range agent.Results(p.UID) {
				got := strings.Split(r.Response.GetEnvs()["NVIDIA_VISIBLE_DEVICES"], ",")
				if want := allocatedUUIDs(a, r.Container); !slices.Equal(sorted(got), want) {
					out = append(out, fmt.Sprintf("pod %s container %s was served GPUs %v, its allocation has %v", p.Name, r.Container, got, want))
				}
			}
		}
	}
	return out
}

func allocatedUUIDs(a *gpuv1alpha1.GPUAllocation, container string) []string {
	var out []string
	for _, c := range a.Spec.Containers {
		if c.Name == container {
			for _, d := range c.Devices {
				out = append(out, d.UUID)
			}
		}
	}
	return sorted(out)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
