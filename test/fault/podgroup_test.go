package fault

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/test/framework"
)

// TestPodGroupFaults runs tessera-scheduler with Kubernetes' Workload API
// on under a stream of PodGroups of GPU slices, on GPUs fragmented by
// running pods that end one by one, and breaks the cluster one way at a
// time: tessera-scheduler killed while gangs wait for their group cycle,
// the bindings of the gangs' pods refused for a while, kube-apiserver
// restarted. After each it checks from API state that no GPU was
// over-committed, that no gang stayed half placed (some members bound,
// others not) longer than the fault's bound, that once the fragments end
// every gang runs whole with exactly its own allocations, and that
// tessera-scheduler's view holds on each node exactly what the bound
// pods' allocations hold: no room of a killed group cycle is kept.
func TestPodGroupFaults(t *testing.T) {
	c := startClusterWith(t, pluginMode, nodes, setup{gangs: true})
	ctx, cancel := context.WithCancel(c.ctx)
	t.Cleanup(cancel)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: podGroupNamespace}}
	if _, err := c.cp.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var report []string
	for i, f := range podGroupFaults() {
		t.Run(f.name, func(t *testing.T) {
			m := newPodGroupMonitor(c.cp)
			mctx, stopMonitor := context.WithCancel(ctx)
			defer stopMonitor()
			go m.run(mctx)
			prefix := fmt.Sprintf("f%d", i)
			c.fragmentGPUs(ctx, t, prefix)
			l := startPodGroupLoad(ctx, c, prefix)
			time.Sleep(3 * time.Second)
			f.inject(ctx, t, c)
			time.Sleep(5 * time.Second)
			created := l.stop(t)

			c.drainPodGroups(ctx, t)
			c.checkGang(ctx, t)
			c.checkHeld(ctx, t)
			longest, gang, everHalf, overCommits := m.findings()
			line := fmt.Sprintf("%-44s %2d gangs of %d, %2d seen half placed, longest %5.1f s (bound %3.0f s)",
				f.name, created, gangSize, everHalf, longest.Seconds(), f.bound.Seconds())
			report = append(report, line)
			t.Log(line)
			for _, v := range overCommits {
				t.Error(v)
			}
			if longest > f.bound {
				t.Errorf("gang %s stayed half placed %s; the bound is %s", gang, longest.Round(100*time.Millisecond), f.bound)
			}
			c.deletePodGroups(ctx, t)
		})
	}
	t.Logf("PodGroup faults:\n%s", strings.Join(report, "\n"))
}

// podGroupFaults are what the PodGroup stream meets. A gang's members are
// bound one by one once its group is admitted, but only once every member
// placed with it has passed its binding as a dry run: a gang whose last
// member's binding is refused is rolled back whole, none bound, and is
// half placed only while its members bind (well under a second), never
// for as long as the refusals last. The invariant is that no gang stays
// half placed longer than refusedBindsBound then, and than maxWait after
// any other fault.
func podGroupFaults() []fault {
	return []fault{
		{"tessera-scheduler killed 4 times, gangs waiting", func(ctx context.Context, t *testing.T, c *cluster) {
			for range 4 {
				c.waitUnboundGangMember(ctx)
				c.restartPlacer(t, time.Second)
				time.Sleep(2 * time.Second)
			}
		}, maxWait},
		{"bindings of each gang's last member refused for 15 s", func(ctx context.Context, t *testing.T, c *cluster) {
			// No member binds: each gang placed meanwhile is rolled back
			// whole and tried again after its back-off.
			allow := c.cp.RefuseBindings(ctx, t, memberName("", gangSize-1))
			time.Sleep(refusedBinds)
			allow()
		}, refusedBindsBound},
		apiServerRestarts(2),
	}
}

// refusedBindsBound is how long a gang may stay half placed while its
// last member's binding is refused: the time its members take to bind,
// with room for a loaded machine, and well under the 15 s of refusals
// that a gang bound in part would stay half placed.
const refusedBindsBound = 5 * time.Second

// waitUnboundGangMember waits, 10 s at most, until a member of a gang
// waits to be placed, so that a kill falls while its group is being
// scheduled.
func (c *cluster) waitUnboundGangMember(ctx context.Context) {
	for range 100 {
		pods, err := c.cp.Kube.CoreV1().Pods(podGroupNamespace).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, p := range pods.Items {
				if p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
					return
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// drainPodGroups ends the fragments and waits until every gang left runs
// whole.
func (c *cluster) drainPodGroups(ctx context.Context, t *testing.T) {
	t.Helper()
	if err := c.cp.Kube.CoreV1().Pods(namespace).DeleteCollection(ctx,
		metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(t, 2*time.Minute, "every gang to run whole", func() (bool, string) {
		pods, err := c.cp.Kube.CoreV1().Pods(podGroupNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		members, running := map[string]int{}, map[string]int{}
		for _, p := range pods.Items {
			members[p.Labels[gangLabel]]++
			if p.Status.Phase == corev1.PodRunning {
				running[p.Labels[gangLabel]]++
			}
		}
		var left []string
		for g, n := range members {
			if running[g] < gangSize {
				left = append(left, fmt.Sprintf("%s (%d of %d members, %d running)", g, n, gangSize, running[g]))
			}
		}
		return len(left) == 0, "waiting: " + strings.Join(left, ", ")
	})
}

// checkHeld waits until tessera-scheduler's view holds on each node
// exactly the memory of the allocations of the pods bound there: a group
// cycle cut off by a kill, or a member whose binding failed, keeps none.
func (c *cluster) checkHeld(ctx context.Context, t *testing.T) {
	t.Helper()
	framework.WaitFor(t, 30*time.Second, "tessera-scheduler to hold what the bound pods are allocated", func() (bool, string) {
		s, err := readStateIn(ctx, c.cp, "")
		if err != nil {
			return false, err.Error()
		}
		live := s.live()
		allocated := map[string]int64{}
		for _, a := range s.allocations {
			if p, ok := live[a.Name]; ok && p.UID == a.Spec.PodUID && p.Spec.NodeName != "" && a.Status.Phase != gpuv1alpha1.AllocationFailed {
				for _, h := range placement.Holds(a.Spec.Containers) {
					allocated[a.Spec.NodeName] += h.MemoryMiB
				}
			}
		}
		var wrong []string
		for _, n := range c.nodes {
			held, err := framework.HeldMiB(ctx, c.scheduler.MetricsAddress, n.name)
			if err != nil {
				return false, err.Error()
			}
			if held != allocated[n.name] {
				wrong = append(wrong, fmt.Sprintf("%s: %d MiB held, %d allocated", n.name, held, allocated[n.name]))
			}
		}
		return len(wrong) == 0, strings.Join(wrong, "; ")
	})
}

// deletePodGroups deletes the stream's PodGroups and pods and waits until
// no pod or allocation is left.
func (c *cluster) deletePodGroups(ctx context.Context, t *testing.T) {
	t.Helper()
	err := c.cp.Kube.CoreV1().Pods(podGroupNamespace).DeleteCollection(ctx,
		metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
	if err == nil {
		err = c.cp.Kube.SchedulingV1beta1().PodGroups(podGroupNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	c.waitNoPods(ctx, t)
}
