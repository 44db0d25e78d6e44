package view

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/quota"
)

// memberOf is a gang member asking for one GPU with memoryMiB, under
// policy.
func memberOf(t testing.TB, memoryMiB int64, policy gpurequest.Policy) GangMember {
	t.Helper()
	req, err := placement.NewRequest([]gpurequest.ContainerRequest{{Name: "main", Kind: gpuv1alpha1.ContainerApp, Count: 1, MemoryMiB: memoryMiB}},
		gpurequest.Selection{}, gpurequest.Binpack)
	if err != nil {
		t.Fatal(err)
	}
	return GangMember{Request: req, Policy: policy}
}

// gangPod is a pod of namespace ns, with no controller, that carries the
// gang's key in its annotation.
func gangPod(uid types.UID, key string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: string(uid), UID: uid,
		Annotations: map[string]string{gpuv1alpha1.GangHoldAnnotation: key},
	}}
}

// live are rules under which a node whose Lease was renewed at now takes
// pods.
var live = Rules{HeartbeatMaxAge: time.Minute}

// addNode adds a live node of gpus 80,000 MiB GPUs.
func addNode(v *View, name string, gpus int) {
	v.SetGPUNode(gpuNode(name, gpus))
	v.SetLease(name, now)
}

// fragmented is two nodes of one 80,000 MiB GPU, each with 50,000 MiB
// taken: 60,000 MiB free in all, but no 40,000 MiB in one piece.
func fragmented(t *testing.T) *View {
	t.Helper()
	v := New()
	addNode(v, "n1", 1)
	addNode(v, "n2", 1)
	v.Place(allocation("p1", "a1", "u1", "n1", containers(50000, 0, "n1-gpu0")))
	v.Place(allocation("p2", "a2", "u2", "n2", containers(50000, 0, "n2-gpu0")))
	return v
}

// TestHoldGangAllOrNone pins that a gang's room is held only when every
// member fits, each beside those before it, and that a refusal leaves the
// view as it was.
func TestHoldGangAllOrNone(t *testing.T) {
	v := fragmented(t)
	_, err := v.HoldGang("w1/main", "ns", "w1", nil, []GangMember{memberOf(t, 20000, gpurequest.Binpack), memberOf(t, 40000, gpurequest.Binpack)}, live, quota.Limits{}, now)
	var unfit *GangUnfitError
	if !errors.As(err, &unfit) || unfit.Member != 1 || unfit.Never {
		t.Fatalf("HoldGang = %v, want the second member unfit, fitting an empty node", err)
	}
	if got := usageOf(t, v, "n1", 0).memory + usageOf(t, v, "n2", 0).memory; got != 100000 {
		t.Errorf("after a refused gang the nodes hold %d MiB, want the 100000 of the two pods: the first member's hold was kept", got)
	}
	if v.GangHeld("w1/main") != 0 {
		t.Error("a refused gang holds room")
	}

	_, err = v.HoldGang("w2/main", "ns", "w2", nil, []GangMember{memberOf(t, 90000, gpurequest.Binpack)}, live, quota.Limits{}, now)
	if !errors.As(err, &unfit) || !unfit.Never {
		t.Errorf("a 90000 MiB pod on 80000 MiB GPUs: HoldGang = %v, want Never", err)
	}

	nodes, err := v.HoldGang("w3/main", "ns", "w3", nil, []GangMember{memberOf(t, 30000, gpurequest.Binpack), memberOf(t, 30000, gpurequest.Binpack)}, live, quota.Limits{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 2 || nodes[0] == nodes[1] {
		t.Errorf("two 30000 MiB pods on two nodes with 30000 free each were held on %v, want one on each", nodes)
	}
	// The namespace's quota counts the held room: 100000 MiB of pods and
	// 60000 held leave no 10000 under a limit of 165000, on a node where
	// the GPUs have room.
	addNode(v, "n3", 1)
	_, err = v.HoldGang("w4/main", "ns", "w4", nil, []GangMember{memberOf(t, 10000, gpurequest.Binpack)}, live, memoryLimit(165000), now)
	if !errors.As(err, &unfit) || unfit.Quota.OK() {
		t.Errorf("a gang over the namespace's quota: HoldGang = %v, want refused by the quota", err)
	}
	// Held room is taken for everyone else.
	if _, _, err := v.Reserve("other", "ns", "other", nodes[0], now, live.Fit(now, memberOf(t, 10000, "").Request, "node", new(Reason))); err == nil {
		t.Error("a pod outside the gang was reserved in the gang's held room")
	}
}

// TestGangPodTakesItsHold pins that a pod of a gang is fitted as if its
// gang's hold on the node were free, takes the hold's place, and that a
// pod placed where its gang holds nothing gives up one hold elsewhere.
func TestGangPodTakesItsHold(t *testing.T) {
	v := New()
	addNode(v, "n1", 1)
	addNode(v, "n2", 1)
	addNode(v, "n3", 1)
	v.Place(allocation("p3", "a3", "u3", "n3", containers(60000, 0, "n3-gpu0")))
	gang := []GangMember{memberOf(t, 60000, gpurequest.Spread), memberOf(t, 60000, gpurequest.Spread)}
	nodes, err := v.HoldGang("w/main", "ns", "w", nil, gang, live, quota.Limits{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if nodes[0] == "n3" || nodes[1] == "n3" {
		t.Fatalf("held on %v, want n1 and n2: n3 has 20000 MiB free", nodes)
	}
	ask := memberOf(t, 60000, "").Request
	fit := live.Fit(now, ask, "node", new(Reason))

	v.JoinGang(gangPod("pod-a", "w/main"))
	fits := false
	v.Read([]string{nodes[0]}, "pod-a", func(_ string, n *Node) { fits = new(placement.Fitter).Feasible(&n.Placement, ask, nil) })
	if !fits {
		t.Errorf("the gang's pod does not fit %s, where its gang holds room for it", nodes[0])
	}
	if _, _, err := v.Reserve("pod-a", "ns", "pod-a", nodes[0], now, fit); err != nil {
		t.Fatalf("reserving the gang's pod in its held room: %v", err)
	}
	if got := v.GangHeld("w/main"); got != 2 {
		t.Errorf("while the pod that took its hold binds the gang holds %d, want 2: the bind may yet fail", got)
	}
	v.Bound("pod-a")
	if got := v.GangHeld("w/main"); got != 1 {
		t.Errorf("after one pod was bound in its hold the gang holds %d, want 1", got)
	}
	if got := usageOf(t, v, nodes[0], 0).memory; got != 60000 {
		t.Errorf("%s holds %d MiB after the pod took the hold, want 60000: counted twice or not at all", nodes[0], got)
	}
	if got := v.Used("ns"); got.MemoryMiB != 180000 {
		t.Errorf("namespace uses %d MiB, want 180000 (p3, the pod, one hold)", got.MemoryMiB)
	}

	// A second pod, placed on a fresh node, gives up the last hold.
	addNode(v, "n4", 1)
	v.JoinGang(gangPod("pod-b", "w/main"))
	if _, _, err := v.Reserve("pod-b", "ns", "pod-b", "n4", now, fit); err != nil {
		t.Fatal(err)
	}
	v.Bound("pod-b")
	if got := v.GangHeld("w/main"); got != 0 {
		t.Errorf("after both pods were placed the gang holds %d, want 0", got)
	}
	if got := usageOf(t, v, nodes[1], 0).memory; got != 0 {
		t.Errorf("%s still holds %d MiB for a gang whose pods are all placed", nodes[1], got)
	}
}

// TestReleaseGangFreesItsRoom pins that releasing a gang frees what it
// still holds and forgets its pods, who then see the room as anyone does.
func TestReleaseGangFreesItsRoom(t *testing.T) {
	v := fragmented(t)
	nodes, err := v.HoldGang("w/main", "ns", "w", nil, []GangMember{memberOf(t, 30000, gpurequest.Binpack)}, live, quota.Limits{}, now)
	if err != nil {
		t.Fatal(err)
	}
	v.JoinGang(gangPod("pod", "w/main"))
	if freed := v.ReleaseGang("w/main"); len(freed) != 1 || freed[0] != nodes[0] {
		t.Errorf("ReleaseGang freed %v, want %v", freed, nodes)
	}
	if got := usageOf(t, v, nodes[0], 0).memory; got != 50000 {
		t.Errorf("%s holds %d MiB after the release, want the 50000 of its pod", nodes[0], got)
	}
	if got := v.Used("ns").MemoryMiB; got != 100000 {
		t.Errorf("namespace uses %d MiB after the release, want 100000", got)
	}
	v.JoinGang(gangPod("late", "w/main"))
	if _, ok := v.members["late"]; ok {
		t.Error("a pod joined a released gang")
	}
}

// TestReleasedReservationGivesTheHoldBack pins that a gang member's
// reservation released unplaced (its bind failed) gives the gang its room
// back, under the same lock, and the member back to the gang: on the node
// it took the hold on, or where it was reserved when it gave up a hold on
// another node, whose room others may have taken since.
func TestReleasedReservationGivesTheHoldBack(t *testing.T) {
	v := New()
	addNode(v, "n1", 1)
	addNode(v, "n2", 1)
	addNode(v, "n3", 1)
	v.Place(allocation("p3", "a3", "u3", "n3", containers(30000, 0, "n3-gpu0")))
	gang := []GangMember{memberOf(t, 60000, gpurequest.Spread), memberOf(t, 60000, gpurequest.Spread)}
	nodes, err := v.HoldGang("w/main", "ns", "w", nil, gang, live, quota.Limits{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if nodes[0] == "n3" || nodes[1] == "n3" {
		t.Fatalf("held on %v, want n1 and n2: n3 has 50000 MiB free", nodes)
	}
	fit := live.Fit(now, memberOf(t, 60000, "").Request, "node", new(Reason))
	small := live.Fit(now, memberOf(t, 40000, "").Request, "node", new(Reason))
	used := v.Used("ns").MemoryMiB

	// A member that took its hold on the node, then failed to bind.
	v.JoinGang(gangPod("pod-a", "w/main"))
	r, err := v.ReserveWithin(quota.Limits{}, "pod-a", "ns", "pod-a", nodes[0], now, fit)
	if err != nil || r.HoldFreed != "" {
		t.Fatalf("reserving in the held room = %+v, %v; want no hold freed elsewhere", r, err)
	}
	if !v.ReleaseReservation("pod-a", now) {
		t.Fatal("the reservation was not released")
	}
	if got := v.GangHeld("w/main"); got != 2 {
		t.Errorf("after the failed bind the gang holds %d, want 2", got)
	}
	if _, _, err := v.Reserve("other", "ns", "other", nodes[0], now, small); err == nil {
		t.Errorf("a pod outside the gang was reserved on %s, in the room a failed bind gave back", nodes[0])
	}
	if got := v.Used("ns").MemoryMiB; got != used {
		t.Errorf("namespace uses %d MiB after the failed bind, want the %d it used before", got, used)
	}
	if _, err := v.ReserveWithin(quota.Limits{}, "pod-a", "ns", "pod-a", nodes[0], now, fit); err != nil {
		t.Fatalf("the member did not take its hold again: %v", err)
	}
	if got := v.GangHeld("w/main"); got != 2 {
		t.Errorf("while the member reserved again binds the gang holds %d, want 2", got)
	}
	v.JoinGang(gangPod("pod-a", "w/main"))
	if _, ok := v.members["pod-a"]; ok {
		t.Error("a member whose reservation stands joined its gang again, to take a second hold")
	}

	// A member placed where the gang holds nothing frees a hold elsewhere;
	// another pod takes that room; the member's bind fails.
	v.Release("u3")
	v.JoinGang(gangPod("pod-b", "w/main"))
	r, err = v.ReserveWithin(quota.Limits{}, "pod-b", "ns", "pod-b", "n3", now, fit)
	if err != nil || r.HoldFreed != nodes[1] {
		t.Fatalf("reserving on n3 = %+v, %v; want the hold on %s freed", r, err, nodes[1])
	}
	if _, _, err := v.Reserve("other", "ns", "other", nodes[1], now, fit); err != nil {
		t.Fatalf("the room freed on %s could not be taken: %v", nodes[1], err)
	}
	v.ReleaseReservation("pod-b", now)
	if got := v.GangHeld("w/main"); got != 2 {
		t.Errorf("after the failed bind the gang holds %d, want 2: pod-b's hold and pod-a's reservation", got)
	}
	for _, node := range []string{nodes[1], "n3"} {
		if got := usageOf(t, v, node, 0).memory; got != 60000 {
			t.Errorf("%s holds %d MiB, want 60000: the room was counted twice or lost", node, got)
		}
	}
	v.JoinGang(gangPod("pod-b", "w/main"))
	if _, err := v.ReserveWithin(quota.Limits{}, "pod-b", "ns", "pod-b", "n3", now, fit); err != nil {
		t.Fatalf("the member did not take the hold given back on n3: %v", err)
	}

	// The bind's allocation replaces the reservation before the binding
	// fails, and is deleted: the room comes back all the same.
	a := written(v, allocation("pod-b", "alloc-b", "pod-b", "n3", containers(60000, 0, "n3-gpu0")))
	v.Place(a)
	if v.ReleaseReservation("pod-b", now) {
		t.Error("a reservation the allocation replaced was released")
	}
	v.ReleaseAllocation(a)
	if got := v.GangHeld("w/main"); got != 2 {
		t.Errorf("after the failed bind's allocation went the gang holds %d, want 2: pod-b's hold and pod-a's reservation", got)
	}
	if got := usageOf(t, v, "n3", 0).memory; got != 60000 {
		t.Errorf("n3 holds %d MiB after the failed bind's allocation went, want the gang's 60000", got)
	}
	if _, err := v.ReserveWithin(quota.Limits{}, "pod-b", "ns", "pod-b", "n3", now, fit); err != nil {
		t.Fatalf("the member did not take the hold given back on n3: %v", err)
	}

	// Nothing comes back to a gang released since.
	v.ReleaseGang("w/main")
	v.ReleaseReservation("pod-b", now)
	if got := usageOf(t, v, "n3", 0).memory; got != 0 {
		t.Errorf("n3 holds %d MiB after a released gang's member failed to bind, want 0", got)
	}
}

// TestOnlyTheWorkloadsPodsJoinItsGang pins that the gang's key, which
// shows on every pod of its Workload, lets a pod into the gang only from
// the Workload's namespace and, when the pod has a controller, only if
// the controller is one of the Workload's owners.
func TestOnlyTheWorkloadsPodsJoinItsGang(t *testing.T) {
	controlled := func(uid types.UID, namespace string, owner types.UID) *corev1.Pod {
		p := gangPod(uid, "w/main")
		p.Namespace = namespace
		if owner != "" {
			p.OwnerReferences = []metav1.OwnerReference{
				{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "not-a-controller"},
				{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: owner, Controller: ptr.To(true)},
			}
		}
		return p
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		join bool
	}{
		{name: "a pod of the Workload's Job", pod: controlled("job-pod", "ns", "job"), join: true},
		{name: "a pod with no controller, as Kueue's plain pods", pod: controlled("plain", "ns", ""), join: true},
		{name: "a pod of another namespace", pod: controlled("elsewhere", "other", ""), join: false},
		{name: "a pod of another namespace and the same Job UID", pod: controlled("elsewhere-job", "other", "job"), join: false},
		{name: "a pod of another controller", pod: controlled("stranger", "ns", "other-job"), join: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := fragmented(t)
			if _, err := v.HoldGang("w/main", "ns", "w", []types.UID{"job"}, []GangMember{memberOf(t, 30000, gpurequest.Binpack)}, live, quota.Limits{}, now); err != nil {
				t.Fatal(err)
			}
			v.JoinGang(tc.pod)
			if _, joined := v.members[tc.pod.UID]; joined != tc.join {
				t.Errorf("joined = %v, want %v", joined, tc.join)
			}
		})
	}
}
