package fault

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/test/framework"
)

// samplePeriod is how often the monitor reads the API.
const samplePeriod = 250 * time.Millisecond

// monitor measures, from API state alone, how long each of the suite's
// pods stays Pending while it could run: bound to a node (its GPUs are
// given; the kubelet has yet to admit it) or unbound while a GPU could hold
// it. All the suite's pods ask for the same slice, so free capacity is a
// number of free slots, and the oldest unbound pods are the ones those
// slots could hold. While the API does not answer nothing is known: waits
// count again from its first answer.
type monitor struct {
	cp  *framework.ControlPlane
	dra bool

	mu      sync.Mutex
	since   map[types.UID]time.Time // pod → when its current wait began
	names   map[types.UID]string    // pod → its name and where it waits
	longest time.Duration
	longPod string
	// overCommits are the over-committed GPUs seen by any reading.
	overCommits []string
	// orphanSince: allocation → when a reading first found its pod gone.
	orphanSince   map[types.UID]time.Time
	orphanNames   map[types.UID]string
	longestOrphan time.Duration
	orphanName    string
}

func newMonitor(cp *framework.ControlPlane, dra bool) *monitor {
	return &monitor{cp: cp, dra: dra, since: map[types.UID]time.Time{}, names: map[types.UID]string{},
		orphanSince: map[types.UID]time.Time{}, orphanNames: map[types.UID]string{}}
}

// run samples until ctx ends.
func (m *monitor) run(ctx context.Context) {
	for ctx.Err() == nil {
		m.sample(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(samplePeriod):
		}
	}
}

// reset starts a new measurement: waits still going on count from now,
// and over-commits seen before are forgotten.
func (m *monitor) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	for uid := range m.since {
		m.since[uid] = now
	}
	for uid := range m.orphanSince {
		m.orphanSince[uid] = now
	}
	m.longest, m.longPod, m.overCommits = 0, "", nil
	m.longestOrphan, m.orphanName = 0, ""
}

// longestOrphanAge returns how long, at the most since reset, an
// allocation outlived its pod, and which allocation it was.
func (m *monitor) longestOrphanAge() (time.Duration, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return longestOf(m.longestOrphan, m.orphanName, m.orphanSince, m.orphanNames)
}

// longestWait returns the longest wait since reset, waits still going on
// included, and the pod that waited.
func (m *monitor) longestWait() (time.Duration, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return longestOf(m.longest, m.longPod, m.since, m.names)
}

// longestOf returns the longer of longest, which name had, and the longest
// of the spans still going on in since, with its name in names.
func longestOf(longest time.Duration, name string, since map[types.UID]time.Time, names map[types.UID]string) (time.Duration, string) {
	now := time.Now()
	for uid, s := range since {
		if d := now.Sub(s); d > longest {
			longest, name = d, names[uid]
		}
	}
	return longest, name
}

// overCommitted returns every over-commit any reading has seen.
func (m *monitor) overCommitted() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.overCommits)
}

// waiting returns the pods waiting now.
func (m *monitor) waiting() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for uid := range m.since {
		out = append(out, m.names[uid])
	}
	slices.Sort(out)
	return out
}

func (m *monitor) sample(ctx context.Context) {
	state, err := readState(ctx, m.cp, m.dra)
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		clear(m.since)
		clear(m.orphanSince)
		return
	}
	orphans := state.orphanedAllocations()
	for uid, since := range m.orphanSince {
		if _, ok := orphans[uid]; !ok {
			if d := now.Sub(since); d > m.longestOrphan {
				m.longestOrphan, m.orphanName = d, m.orphanNames[uid]
			}
			delete(m.orphanSince, uid)
		}
	}
	for uid, name := range orphans {
		if _, ok := m.orphanSince[uid]; !ok {
			m.orphanSince[uid], m.orphanNames[uid] = now, name
		}
	}
	for _, v := range state.overCommitted() {
		if !slices.Contains(m.overCommits, v) {
			m.overCommits = append(m.overCommits, v)
		}
	}
	waiting := state.waiting()
	for uid, since := range m.since {
		if _, ok := waiting[uid]; !ok {
			m.record(uid, now.Sub(since))
			delete(m.since, uid)
		}
	}
	for uid, where := range waiting {
		if _, ok := m.since[uid]; !ok {
			m.since[uid] = now
		}
		m.names[uid] = where
	}
}

func (m *monitor) record(uid types.UID, wait time.Duration) {
	if wait > m.longest {
		m.longest, m.longPod = wait, m.names[uid]
	}
}

// state is one reading of the API: the suite's pods, their allocations
// and the GPUs; in DRA mode their claims and the nodes' ResourceSlices.
type state struct {
	pods        []corev1.Pod
	allocations []gpuv1alpha1.GPUAllocation
	nodes       []gpuv1alpha1.GPUNode
	dra         bool
	claims      []resourceapi.ResourceClaim
	slices      []resourceapi.ResourceSlice
}

func readState(ctx context.Context, cp *framework.ControlPlane, dra bool) (*state, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if dra {
		return readDRAState(ctx, cp)
	}
	return readStateIn(ctx, cp, namespace)
}

// readStateIn reads the pods and allocations of one namespace, or of all
// when it is empty, and the GPUs.
func readStateIn(ctx context.Context, cp *framework.ControlPlane, namespace string) (*state, error) {
	// Allocations before pods: an allocation made after the first list
	// is not counted, and one whose pod is gone by the second is not
	// either, so a reading never counts two pods on the same GPU slice.
	allocs, err := cp.Tessera.GpuV1alpha1().GPUAllocations(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	pods, err := cp.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	nodes, err := cp.Tessera.GpuV1alpha1().GPUNodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return &state{pods: pods.Items, allocations: allocs.Items, nodes: nodes.Items}, nil
}

// live returns the pods that hold or want GPUs: not deleted, not finished.
func (s *state) live() map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	for i := range s.pods {
		p := &s.pods[i]
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out[p.Name] = p
		}
	}
	return out
}

// used sums what the allocations of live pods hold on each GPU; a Failed
// allocation holds nothing.
func (s *state) used() map[string]*placement.Hold {
	used := map[string]*placement.Hold{}
	s.eachHolding(func(a *gpuv1alpha1.GPUAllocation, _ *corev1.Pod) { framework.AddGPUUse(used, a) })
	return used
}

// eachHolding calls fn with each allocation that holds GPUs, that of a
// live pod and not Failed, and its pod.
func (s *state) eachHolding(fn func(a *gpuv1alpha1.GPUAllocation, pod *corev1.Pod)) {
	live := s.live()
	for i := range s.allocations {
		a := &s.allocations[i]
		if pod, ok := live[a.Name]; ok && pod.UID == a.Spec.PodUID && a.Status.Phase != gpuv1alpha1.AllocationFailed {
			fn(a, pod)
		}
	}
}

// freeSlots counts how many more of the suite's pods the healthy GPUs of
// Ready nodes can hold.
func (s *state) freeSlots() int64 {
	if s.dra {
		return s.freeDRASlots()
	}
	used := s.used()
	var slots int64
	for _, n := range s.nodes {
		if !meta.IsStatusConditionTrue(n.Status.Conditions, gpuv1alpha1.GPUNodeReady) {
			continue
		}
		for _, d := range n.Status.Devices {
			if d.Health != gpuv1alpha1.GPUHealthy {
				continue
			}
			u := used[d.UUID]
			if u == nil {
				u = &placement.Hold{}
			}
			slots += max(0, min((d.MemoryMiB-u.MemoryMiB)/podMemoryMiB, int64((d.Cores-u.Cores)/podCores), int64(d.ShareLimit-u.Shares)))
		}
	}
	return slots
}

// waiting returns the pods that are Pending while they could run, each
// with where it waits: bound ones, and as many unbound ones, oldest first,
// as there are free slots.
func (s *state) waiting() map[types.UID]string {
	out := map[types.UID]string{}
	var unbound []*corev1.Pod
	for _, p := range s.live() {
		switch {
		case p.Status.Phase != corev1.PodPending:
		case p.Spec.NodeName != "":
			out[p.UID] = p.Name + ", bound to " + p.Spec.NodeName
		default:
			unbound = append(unbound, p)
		}
	}
	slices.SortFunc(unbound, func(a, b *corev1.Pod) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, p := range unbound[:min(int64(len(unbound)), s.freeSlots())] {
		out[p.UID] = p.Name + ", unbound" + lastSchedulingWord(p)
	}
	return out
}

// lastSchedulingWord is kube-scheduler's last word on an unbound pod, so
// that a long wait says whether the pod was turned away or not tried.
func lastSchedulingWord(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			msg := c.Message
			if len(msg) > 120 {
				msg = msg[:120] + "..."
			}
			return fmt.Sprintf("; at %s kube-scheduler said %s: %s", c.LastTransitionTime.Format(time.TimeOnly), c.Reason, msg)
		}
	}
	return "; kube-scheduler has not said why"
}
