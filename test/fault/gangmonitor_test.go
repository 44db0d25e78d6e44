package fault

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/test/framework"
)

// gangMonitor follows, from API state alone, the gang-fit example's
// Workloads and pods and every GPU: when each Workload was created, sent
// back (check Retry) and admitted; how long each of its pods stayed
// Pending; any Workload deactivated or Rejected; and any GPU that the
// allocations of live pods, in every namespace, over-commit.
type gangMonitor struct {
	cp      *framework.ControlPlane
	dynamic dynamic.Interface

	mu        sync.Mutex
	workloads map[types.UID]*workloadSeen
	// pending: pod → when a reading first found it Pending.
	pending     map[types.UID]time.Time
	podNames    map[types.UID]string
	longest     time.Duration
	longestPod  string
	overCommits []string
	// refused are the Workloads seen deactivated or Rejected.
	refused []string
}

// workloadSeen is what the readings saw of one Workload.
type workloadSeen struct {
	name     string
	created  time.Time
	retried  bool
	admitted time.Time
}

func newGangMonitor(cp *framework.ControlPlane, client dynamic.Interface) *gangMonitor {
	return &gangMonitor{cp: cp, dynamic: client, workloads: map[types.UID]*workloadSeen{},
		pending: map[types.UID]time.Time{}, podNames: map[types.UID]string{}}
}

// run samples until ctx ends.
func (m *gangMonitor) run(ctx context.Context) {
	for ctx.Err() == nil {
		m.sample(ctx)
		sleep(ctx, samplePeriod)
	}
}

func (m *gangMonitor) sample(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := readStateIn(ctx, m.cp, "")
	if err != nil {
		m.lost()
		return
	}
	wls, err := m.dynamic.Resource(framework.KueueResource("workloads")).Namespace(gangNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		m.lost()
		return
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range overCommittedOnNodes(s) {
		if !slices.Contains(m.overCommits, v) {
			m.overCommits = append(m.overCommits, v)
		}
	}
	for i := range wls.Items {
		wl := &wls.Items[i]
		seen := m.workloads[wl.GetUID()]
		if seen == nil {
			seen = &workloadSeen{name: wl.GetName(), created: wl.GetCreationTimestamp().Time}
			m.workloads[wl.GetUID()] = seen
		}
		state, message := gangFitState(wl)
		if state == "Retry" {
			seen.retried = true
		}
		if seen.admitted.IsZero() && conditionTrue(wl, "Admitted") {
			seen.admitted = now
		}
		active, found, _ := unstructured.NestedBool(wl.Object, "spec", "active")
		if (found && !active) || state == "Rejected" {
			what := fmt.Sprintf("Workload %s deactivated or rejected: check %s: %s", wl.GetName(), state, message)
			if !slices.Contains(m.refused, what) {
				m.refused = append(m.refused, what)
			}
		}
	}
	pending := map[types.UID]string{}
	for i := range s.pods {
		p := &s.pods[i]
		if p.Namespace == gangNamespace && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodPending {
			where := "unbound"
			if p.Spec.NodeName != "" {
				where = "bound to " + p.Spec.NodeName
			}
			pending[p.UID] = p.Name + ", " + where
		}
	}
	for uid, since := range m.pending {
		if _, ok := pending[uid]; !ok {
			m.record(uid, now.Sub(since))
			delete(m.pending, uid)
		}
	}
	for uid, what := range pending {
		if _, ok := m.pending[uid]; !ok {
			m.pending[uid] = now
		}
		m.podNames[uid] = what
	}
}

// lost forgets the waits going on: while the API does not answer nothing
// is known, and waits count again from its first answer.
func (m *gangMonitor) lost() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.pending)
}

func (m *gangMonitor) record(uid types.UID, wait time.Duration) {
	if wait > m.longest {
		m.longest, m.longestPod = wait, m.podNames[uid]
	}
}

// longestPending returns the longest a pod of a gang stayed Pending, waits
// still going on included, and which pod it was.
func (m *gangMonitor) longestPending() (time.Duration, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return longestOf(m.longest, m.longestPod, m.pending, m.podNames)
}

// findings returns the over-commits and the deactivated or rejected
// Workloads any reading saw.
func (m *gangMonitor) findings() (overCommits, refused []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.overCommits), slices.Clone(m.refused)
}

// admissions returns how many Workloads were seen, how many were sent
// back at least once, and, for those admitted, each one's wait from
// creation to admission.
func (m *gangMonitor) admissions() (seen, retried int, waits []time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range m.workloads {
		seen++
		if w.retried {
			retried++
		}
		if !w.admitted.IsZero() {
			waits = append(waits, w.admitted.Sub(w.created))
		}
	}
	slices.Sort(waits)
	return seen, retried, waits
}

// admittedAt returns when a reading first saw the Workload admitted; zero
// if none did.
func (m *gangMonitor) admittedAt(uid types.UID) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w := m.workloads[uid]; w != nil {
		return w.admitted
	}
	return time.Time{}
}

// overCommittedOnNodes names every GPU of a GPUNode that the allocations
// of live pods over-commit. An allocation on a node that is gone, as
// while a node is deleted and added again, over-commits nothing.
func overCommittedOnNodes(s *state) []string {
	gpus := map[string]bool{}
	for _, n := range s.nodes {
		for _, d := range n.Status.Devices {
			gpus[d.UUID] = true
		}
	}
	used := map[string]*placement.Hold{}
	for uuid, u := range s.used() {
		if gpus[uuid] {
			used[uuid] = u
		}
	}
	return framework.OverCommitted(s.nodes, used)
}

// gangFitState returns the state and message of the check tessera-gang-fit
// on the Workload.
func gangFitState(wl *unstructured.Unstructured) (state, message string) {
	checks, _, _ := unstructured.NestedSlice(wl.Object, "status", "admissionChecks")
	for _, c := range checks {
		if c, ok := c.(map[string]any); ok && c["name"] == "tessera-gang-fit" {
			return fmt.Sprint(c["state"]), fmt.Sprint(c["message"])
		}
	}
	return "", ""
}

// conditionTrue reports whether the Workload's condition kind is True.
func conditionTrue(wl *unstructured.Unstructured, kind string) bool {
	conditions, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
	for _, c := range conditions {
		if c, ok := c.(map[string]any); ok && c["type"] == kind {
			return c["status"] == "True"
		}
	}
	return false
}
