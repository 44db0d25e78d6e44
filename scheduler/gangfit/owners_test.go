package gangfit

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// TestHeldRoomTakesOnlyTheOwnersPods pins that the room held for a
// Workload goes to the pods of the Job that owns it, and not to a pod of
// another controller that carries the same key.
func TestHeldRoomTakesOnlyTheOwnersPods(t *testing.T) {
	f := newFixture(t)
	key := f.setWorkload(t, "small", 1, 30000, statePending, 0)
	obj, _, err := f.c.workloads.GetIndexer().GetByKey(key)
	if err != nil {
		t.Fatal(err)
	}
	u := obj.(*unstructured.Unstructured).DeepCopy()
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "small", UID: "job-uid", Controller: ptr.To(true)}})
	if err := f.c.workloads.GetIndexer().Update(u); err != nil {
		t.Fatal(err)
	}
	f.sync(t, key)

	place := func(uid, controller types.UID) {
		t.Helper()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "team", Name: string(uid), UID: uid,
			Annotations:     map[string]string{gpuv1alpha1.GangHoldAnnotation: "uid-small/main"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: controller, Controller: ptr.To(true)}},
		}}
		f.view.JoinGang(pod)
		if _, _, err := f.view.Reserve(uid, "team", string(uid), "n1", f.clock.Now(), func(*view.Node) ([]gpuv1alpha1.ContainerAllocation, error) { return nil, nil }); err != nil {
			t.Fatal(err)
		}
	}
	place("stranger", "other-job-uid")
	if got := f.view.GangHeld("uid-small/main"); got != 1 {
		t.Errorf("after another Job's pod was placed the Workload's room is held for %d pods, want 1", got)
	}
	place("member", "job-uid")
	f.view.Bound("member")
	if got := f.view.GangHeld("uid-small/main"); got != 0 {
		t.Errorf("after the Job's pod was placed the Workload's room is held for %d pods, want 0", got)
	}
}
