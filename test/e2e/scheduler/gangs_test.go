package scheduler

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tessera-gpu/tessera/test/framework"
)

// TestGangs runs gangs of GPU slices through Kubernetes' Workload API
// (PodGroup) in tessera-scheduler, on a control plane with the
// GenericWorkload feature gate and scheduling.k8s.io/v1beta1 on in every
// process. After each scenario the GPU accounting invariants must hold.
func TestGangs(t *testing.T) {
	e := startPluginEnvWith(t, framework.Options{ControllerManager: true, Gangs: true})
	ctx := t.Context()
	for _, s := range []struct {
		name string
		run  func(ctx context.Context, t *testing.T, e *env)
	}{
		{"none placed while one member does not fit", testGangWaitsForRoom},
		{"two gangs racing for room that fits one", testGangsRacing},
		{"packed on the fewest nodes", testGangPacked},
		{"placed whole on the fewest nodes", testGangPlacedWhole},
		{"a member's binding refused", testGangBindingRefused},
		{"scheduler restarted with the gang half bound", testGangRestart},
		{"the example gang", testExampleGang},
	} {
		t.Run(s.name, func(t *testing.T) {
			s.run(ctx, t, e)
			e.checkNoOvercommit(ctx, t)
		})
	}
}

// gang is a PodGroup and the names of its pods.
type gang struct {
	name string
	pods []string
}

// createGang creates a PodGroup of size pods with minCount size, and its
// pods, each asking for memoryMiB of one GPU on the group's nodes.
func (e *env) createGang(ctx context.Context, t *testing.T, name, group string, size int, memoryMiB int64) gang {
	t.Helper()
	e.createPodGroup(ctx, t, name, int32(size))
	g := gang{name: name}
	for i := range size {
		pod := gangPod(name+"-"+strconv.Itoa(i), group, name, memoryMiB)
		e.createPod(ctx, t, pod)
		g.pods = append(g.pods, pod.Name)
	}
	return g
}

func (e *env) createPodGroup(ctx context.Context, t *testing.T, name string, minCount int32) {
	t.Helper()
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount},
		}},
	}
	if _, err := e.cp.Kube.SchedulingV1beta1().PodGroups(namespace).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PodGroup %s: %v", name, err)
	}
}

// gangPod is a pod of the PodGroup podGroup asking for memoryMiB of one
// GPU.
func gangPod(name, group, podGroup string, memoryMiB int64) *corev1.Pod {
	pod := gpuPod(name, group, nil, ctr{name: "c", count: 1, memory: memoryMiB})
	pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(podGroup)}
	return pod
}

// deleteGang deletes the gang's pods and PodGroup.
func (e *env) deleteGang(ctx context.Context, t *testing.T, g gang) {
	t.Helper()
	for _, name := range g.pods {
		e.deletePod(ctx, t, name)
	}
	if err := e.cp.Kube.SchedulingV1beta1().PodGroups(namespace).Delete(ctx, g.name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting PodGroup %s: %v", g.name, err)
	}
}

// bound returns which of the pods are bound to a node.
func (e *env) bound(ctx context.Context, t *testing.T, pods []string) []string {
	t.Helper()
	var out []string
	for _, name := range pods {
		pod, err := e.cp.Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pod.Spec.NodeName != "" {
			out = append(out, name)
		}
	}
	return out
}

// waitUnschedulable waits until kube-scheduler has tried each pod and
// found it unschedulable, and returns the pods' reasons.
func (e *env) waitUnschedulable(ctx context.Context, t *testing.T, pods []string) []string {
	t.Helper()
	var messages []string
	for _, name := range pods {
		var message string
		framework.WaitFor(t, 60*time.Second, "pod "+name+" to be found unschedulable", func() (bool, string) {
			pod, err := e.cp.Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
					message = c.Message
					return pod.Spec.NodeName == "", "bound to " + pod.Spec.NodeName
				}
			}
			return false, "not tried yet; node " + pod.Spec.NodeName
		})
		messages = append(messages, name+": "+message)
	}
	return messages
}

// allocations counts the GPUAllocations of the pods.
func (e *env) allocations(ctx context.Context, t *testing.T, pods []string) int {
	t.Helper()
	list, err := e.cp.Tessera.GpuV1alpha1().GPUAllocations(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range list.Items {
		for _, name := range pods {
			if a.Name == name {
				n++
			}
		}
	}
	return n
}

// heldMiB is the GPU memory tessera-scheduler's view holds on the node:
// what its pods are allocated and what is reserved for pods not yet bound.
func (e *env) heldMiB(t *testing.T, node string) int64 {
	t.Helper()
	held, err := framework.HeldMiB(t.Context(), e.scheduler.MetricsAddress, node)
	if err != nil {
		t.Fatal(err)
	}
	return held
}

// waitHeldMiB waits until tessera-scheduler's view holds want MiB on the
// node.
func (e *env) waitHeldMiB(t *testing.T, node string, want int64) {
	t.Helper()
	framework.WaitFor(t, 30*time.Second, "tessera-scheduler to hold "+strconv.FormatInt(want, 10)+" MiB on "+node, func() (bool, string) {
		got := e.heldMiB(t, node)
		return got == want, strconv.FormatInt(got, 10) + " MiB held"
	})
}

// testGangWaitsForRoom pins all or nothing: a gang of 4 slices where only
// 3 fit places none, writes no GPUAllocation and holds no GPU; once room
// frees, all 4 are placed.
func testGangWaitsForRoom(ctx context.Context, t *testing.T, e *env) {
	e.addNode(ctx, t, "gang-room", "gang-room", 10, t4())
	blocker := gpuPod("gang-room-blocker", "gang-room", nil, ctr{name: "c", count: 1, memory: 3360})
	e.createPod(ctx, t, blocker)
	e.waitBound(ctx, t, blocker.Name)

	// 12000 MiB free: three members of 3500 fit, the fourth does not.
	g := e.createGang(ctx, t, "room", "gang-room", 4, 3500)
	t.Logf("the gang's pods wait: %q", e.waitUnschedulable(ctx, t, g.pods))
	if b := e.bound(ctx, t, g.pods); len(b) > 0 {
		t.Errorf("pods %v of a gang that does not fit were bound", b)
	}
	if n := e.allocations(ctx, t, g.pods); n > 0 {
		t.Errorf("%d GPUAllocations written for a gang that does not fit", n)
	}
	if got := e.heldMiB(t, "gang-room"); got != 3360 {
		t.Errorf("tessera-scheduler holds %d MiB on the node, want only the other pod's 3360", got)
	}

	freed := time.Now()
	e.deletePod(ctx, t, blocker.Name)
	for _, name := range g.pods {
		e.waitBound(ctx, t, name)
	}
	t.Logf("all 4 placed and allocated %v after the room freed", time.Since(freed).Round(time.Millisecond))
	e.waitHeldMiB(t, "gang-room", 4*3500)
}

// testGangsRacing pins that of two gangs racing for room that fits one,
// exactly one is placed, whole, and the other not at all.
func testGangsRacing(ctx context.Context, t *testing.T, e *env) {
	e.addNode(ctx, t, "gang-race", "gang-race", 10, t4())
	e.createPodGroup(ctx, t, "race-a", 2)
	e.createPodGroup(ctx, t, "race-b", 2)
	a, b := gang{name: "race-a"}, gang{name: "race-b"}
	// Interleaved, so that neither gang is whole in the queue first.
	for i := range 2 {
		for _, g := range []*gang{&a, &b} {
			pod := gangPod(g.name+"-"+strconv.Itoa(i), "gang-race", g.name, 7000)
			e.createPod(ctx, t, pod)
			g.pods = append(g.pods, pod.Name)
		}
	}
	all := append(append([]string{}, a.pods...), b.pods...)
	var winner, loser gang
	framework.WaitFor(t, 60*time.Second, "one gang to be placed", func() (bool, string) {
		bound := e.bound(ctx, t, all)
		switch {
		case len(bound) == 2 && strings.HasPrefix(bound[0], "race-a") && strings.HasPrefix(bound[1], "race-a"):
			winner, loser = a, b
		case len(bound) == 2 && strings.HasPrefix(bound[0], "race-b") && strings.HasPrefix(bound[1], "race-b"):
			winner, loser = b, a
		default:
			return false, "bound: " + strings.Join(bound, ",")
		}
		return true, ""
	})
	for _, name := range winner.pods {
		e.waitBound(ctx, t, name)
	}
	e.waitUnschedulable(ctx, t, loser.pods)
	if bound := e.bound(ctx, t, all); len(bound) != 2 {
		t.Errorf("bound %v, want only gang %s's two pods", bound, winner.name)
	}
	if n := e.allocations(ctx, t, loser.pods); n > 0 {
		t.Errorf("%d GPUAllocations written for gang %s, which did not fit", n, loser.name)
	}
	e.waitHeldMiB(t, "gang-race", 2*7000)
	e.deleteGang(ctx, t, loser)
	e.deleteGang(ctx, t, winner)
}

// testGangPacked pins that under the default node policy (binpack) a gang
// that fits on one node goes on one, where spreading over three emptier
// nodes was possible.
func testGangPacked(ctx context.Context, t *testing.T, e *env) {
	for _, name := range []string{"gang-pack-1", "gang-pack-2", "gang-pack-3"} {
		e.addNode(ctx, t, name, "gang-pack", 10, a100(0))
	}
	g := e.createGang(ctx, t, "pack", "gang-pack", 4, 10000)
	nodes := map[string]bool{}
	for _, name := range g.pods {
		pod, _ := e.waitBound(ctx, t, name)
		nodes[pod.Spec.NodeName] = true
	}
	if len(nodes) != 1 {
		t.Errorf("the gang went on %d nodes %v, want 1", len(nodes), nodes)
	}
}

// testGangPlacedWhole pins that under the default node policy (binpack)
// Tessera places a gang as a whole on the fewest nodes, where placing its
// pods one by one would not: the busiest node has room for one of the
// four pods, so the first pod, scored alone, goes there and the other
// three to an empty node, leaving the gang on two nodes; spreading over
// the two empty nodes was possible too. Each empty node holds all four.
func testGangPlacedWhole(ctx context.Context, t *testing.T, e *env) {
	const busy = "gang-whole-busy"
	e.addNode(ctx, t, busy, "gang-whole", 10, t4())
	blocker := gpuPod("gang-whole-blocker", "gang-whole", nil, ctr{name: "c", count: 1, memory: 7680})
	e.createPod(ctx, t, blocker)
	e.waitBound(ctx, t, blocker.Name)
	for _, name := range []string{"gang-whole-1", "gang-whole-2"} {
		e.addNode(ctx, t, name, "gang-whole", 10, t4(), t4())
	}
	g := e.createGang(ctx, t, "whole", "gang-whole", 4, 7680)
	nodes := map[string]int{}
	for _, name := range g.pods {
		pod, _ := e.waitBound(ctx, t, name)
		nodes[pod.Spec.NodeName]++
	}
	if len(nodes) != 1 || nodes[busy] > 0 {
		t.Errorf("the gang's pods went on %v, want all 4 on one empty node", nodes)
	}
	e.deleteGang(ctx, t, g)
	e.deletePod(ctx, t, blocker.Name)
}
