package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/waiters"
)

// nodeInfoOf is kube-scheduler's snapshot of an empty node.
func nodeInfoOf(name string) fwk.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	return ni
}

// wantClaimed checks that Filter turns the pod away from the node for
// room other pods released for it are to take.
func wantClaimed(t *testing.T, what string, st *fwk.Status) {
	t.Helper()
	wantCode(t, what, st, fwk.UnschedulableAndUnresolvable)
	if !strings.Contains(st.Message(), waiters.Claimed) {
		t.Errorf("%s: %q, want it to say %q", what, st.Message(), waiters.Claimed)
	}
}

// TestReleasedPodsKeepTheirRoom checks that the room a free gives the
// pods it releases is theirs until their cycles end: another pod released
// meanwhile, which kube-scheduler may score onto that node, is turned
// away there and fits only the room given to it. The room is free to
// others again when a claimant's cycle fails, when a later play gives it
// to a pod ahead in the queue, and once a claim is older than a pod
// released waits for its cycle, and when the claimant is deleted. A pod
// of higher priority, ahead of them all, is not kept from it.
func TestReleasedPodsKeepTheirRoom(t *testing.T) {
	p, v, act := newTestPlugin(t)
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		addNode(p, v, name, 1, 81920)
	}
	fillA := allocationOn(v, gpuPod("fill-a", 81920), "a", "a-GPU-0", 81920)
	fillB := allocationOn(v, gpuPod("fill-b", 81920), "b", "b-GPU-0", 81920)
	w := waitFor(t, p, "w", 4, 40960)
	act.take()
	for _, fill := range []*gpuv1alpha1.GPUAllocation{fillA, fillB} {
		v.ReleaseAllocation(fill)
		p.requeue.Freed(fill.Spec.NodeName)
	}
	if got, want := act.take(), keys(w); !slices.Equal(got, want) {
		t.Fatalf("the frees activated %v, want %v", got, want)
	}

	// w-0 and w-1 were released for a, w-2 and w-3 for b; kube-scheduler
	// filters every node for each.
	s0, s2 := preFilter(t, p, w[0]), preFilter(t, p, w[2])
	wantClaimed(t, "Filter w-2 on a", p.Filter(ctx, s2, w[2], nodeInfoOf("a")))
	wantCode(t, "Filter w-2 on b", p.Filter(ctx, s2, w[2], nodeInfoOf("b")), fwk.Success)
	wantCode(t, "Filter w-0 on a", p.Filter(ctx, s0, w[0], nodeInfoOf("a")), fwk.Success)
	wantClaimed(t, "Filter w-0 on b", p.Filter(ctx, s0, w[0], nodeInfoOf("b")))
	urgent := withPriority(gpuPod("urgent", 40960), 50)
	wantCode(t, "Filter a pod of higher priority on a", p.Filter(ctx, preFilter(t, p, urgent), urgent, nodeInfoOf("a")), fwk.Success)
	p.requeue.Forget(urgent.UID)

	// w-0's cycle fails: half of a is nobody's.
	p.requeue.Failed(w[0].UID)
	s3 := preFilter(t, p, w[3])
	wantCode(t, "Filter w-3 on a after w-0's cycle failed", p.Filter(ctx, s3, w[3], nodeInfoOf("a")), fwk.Success)
	p.requeue.Failed(w[3].UID)

	// A pod ahead of the others in the queue comes: a play of b gives it
	// b's room, which w-2 and w-3 lose.
	high := withPriority(gpuPod("high", 81920), 100)
	failOnce(t, p, high)
	p.requeue.Freed("b")
	wantCode(t, "Filter high on b", p.Filter(ctx, preFilter(t, p, high), high, nodeInfoOf("b")), fwk.Success)
	wantClaimed(t, "Filter w-2 on b once high has its room", p.Filter(ctx, s2, w[2], nodeInfoOf("b")))
	req, err := p.parser.Parse(w[3])
	if err != nil {
		t.Fatal(err)
	}
	if held, _ := p.fitGate.Judge(w[3], req.Request, p.rules, p.view); !held {
		t.Errorf("the fit gate lets w-3 by for room that went to pods ahead of it")
	}

	// high is deleted: b's room is free again.
	p.requeue.Forget(high.UID)
	wantCode(t, "Filter w-2 on b once high is gone", p.Filter(ctx, s2, w[2], nodeInfoOf("b")), fwk.Success)

	// The fit gate's judging gave a's room to w-0 and w-1 again, which
	// never come for it.
	s3 = preFilter(t, p, w[3])
	wantClaimed(t, "Filter w-3 on a", p.Filter(ctx, s3, w[3], nodeInfoOf("a")))
	p.clock.(*testingclock.FakePassiveClock).SetTime(p.clock.Now().Add(31 * time.Second))
	v.SetLease("a", p.clock.Now())
	wantCode(t, "Filter w-3 on a once their claims are old", p.Filter(ctx, s3, w[3], nodeInfoOf("a")), fwk.Success)
}

// TestGangPodsClaimNoRoom checks that the pods of a gang a free releases
// keep no room from one another: a gang takes its room together, in its
// own cycle, so the pod the free had no room for still fits where its
// gang's room is free, as do the others.
func TestGangPodsClaimNoRoom(t *testing.T) {
	p, v, act := newTestPlugin(t)
	ctx := context.Background()
	addNode(p, v, "a", 1, 81920)
	fill := allocationOn(v, gpuPod("fill", 81920), "a", "a-GPU-0", 81920)
	var gang []*v1.Pod
	for i := range 3 {
		pod := gpuPod(fmt.Sprintf("g-%d", i), 40960)
		pod.CreationTimestamp = metav1.NewTime(time.Unix(int64(i), 0))
		pod.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To("trainer")}
		failOnce(t, p, pod)
		gang = append(gang, pod)
	}
	act.take()
	v.ReleaseAllocation(fill)
	p.requeue.Freed("a")
	if got, want := act.take(), keys(gang[:2]); !slices.Equal(got, want) {
		t.Fatalf("the free activated %v, want %v", got, want)
	}
	for _, pod := range gang {
		wantCode(t, "Filter "+pod.Name+" on a", p.Filter(ctx, preFilter(t, p, pod), pod, nodeInfoOf("a")), fwk.Success)
	}
}
