package gangfit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/podrequest"
	"github.com/tessera-gpu/tessera/scheduler/tracker"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

const checkName = "gang-fit"

// fixture is a check on one node of 4 × 80,000 MiB GPUs, each with
// 50,000 MiB taken by an earlier pod: 30,000 MiB free on each.
type fixture struct {
	c       *Controller
	view    *view.View
	clock   *clocktesting.FakeClock
	pods    cache.Indexer
	nodes   cache.Indexer
	applied []checkState
	freed   []string
	// retried are the Workloads whose retry time the check moved to now.
	retried []string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{view: view.New(), clock: clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))}
	gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	for i := range 4 {
		uuid := fmt.Sprintf("gpu%d", i)
		gn.Status.Devices = append(gn.Status.Devices, gpuv1alpha1.GPUDevice{UUID: uuid, Index: int32(i), Model: "A100",
			MemoryMiB: 80000, Cores: 100, ShareLimit: 10, Health: gpuv1alpha1.GPUHealthy})
		f.view.Place(&gpuv1alpha1.GPUAllocation{
			ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "fragment-" + uuid, UID: types.UID("a-" + uuid)},
			Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: types.UID("p-" + uuid), NodeName: "n1", Containers: []gpuv1alpha1.ContainerAllocation{{
				Name: "main", Kind: gpuv1alpha1.ContainerApp, Devices: []gpuv1alpha1.DeviceAllocation{{UUID: uuid, MemoryMiB: 50000}},
			}}},
		})
	}
	f.view.SetGPUNode(gn)
	f.view.SetLease("n1", f.clock.Now())

	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		workloads: "WorkloadList", admissionChecks: "AdmissionCheckList", resourceFlavors: "ResourceFlavorList",
	})
	dyn.PrependReactor("patch", "workloads", func(action k8stesting.Action) (bool, runtime.Object, error) {
		var u unstructured.Unstructured
		if err := json.Unmarshal(action.(k8stesting.PatchAction).GetPatch(), &u.Object); err != nil {
			t.Fatal(err)
		}
		var w workload
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &w); err != nil {
			t.Fatal(err)
		}
		if len(w.Status.AdmissionChecks) > 0 && w.ResourceVersion != "7" {
			t.Errorf("the check applied its state on resource version %q, want 7, the one it decided on", w.ResourceVersion)
		}
		f.applied = append(f.applied, w.Status.AdmissionChecks...)
		if w.Status.RequeueState != nil {
			f.retried = append(f.retried, action.(k8stesting.PatchAction).GetName())
		}
		return true, &u, nil
	})
	f.pods = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	f.nodes = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	f.setNode(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	f.c = New(Config{
		Dynamic: dyn,
		View:    f.view,
		Rules:   view.Rules{HeartbeatMaxAge: time.Hour},
		Parser: podrequest.Parser{ResourceNames: gpurequest.DefaultResourceNames(),
			DefaultNodePolicy: gpurequest.Binpack, DefaultGPUPolicy: gpurequest.Spread},
		Pods:        corelisters.NewPodLister(f.pods),
		Nodes:       corelisters.NewNodeLister(f.nodes),
		Requeue:     f,
		Clock:       f.clock,
		HoldTimeout: 5 * time.Minute,
		RetryAfter:  15 * time.Second,
	})
	ac := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
		"metadata": map[string]any{"name": checkName},
		"spec":     map[string]any{"controllerName": gpuv1alpha1.GangFitControllerName},
	}}
	if err := f.c.checks.GetIndexer().Add(ac); err != nil {
		t.Fatal(err)
	}
	f.c.leading.Store(true)
	return f
}

// setNode puts the node, trimmed as the scheduler's informer keeps it,
// into the node lister's cache.
func (f *fixture) setNode(t *testing.T, node *corev1.Node) {
	t.Helper()
	trimmed, err := tracker.Trim(gpurequest.DefaultResourceNames())(node)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.nodes.Update(trimmed); err != nil {
		t.Fatal(err)
	}
}

// setFlavor puts a Kueue ResourceFlavor into the check's cache.
func (f *fixture) setFlavor(t *testing.T, name string, nodeLabels map[string]string, tolerations []corev1.Toleration) {
	t.Helper()
	var rf resourceFlavor
	rf.Name = name
	rf.Spec.NodeLabels, rf.Spec.Tolerations = nodeLabels, tolerations
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&rf)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.c.flavors.GetIndexer().Update(&unstructured.Unstructured{Object: obj}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) Freed(node string)    { f.freed = append(f.freed, node) }
func (f *fixture) Forget(uid types.UID) {}

// setWorkload puts a Workload of pods pods asking for one GPU of memoryMiB
// each, with quota reserved and the check in state, since the check's
// last transition ago, into the informer's cache, and returns its key.
func (f *fixture) setWorkload(t *testing.T, name string, pods int32, memoryMiB int64, state string, ago time.Duration) string {
	return f.setWorkloadWith(t, name, pods, memoryMiB, state, ago, nil)
}

// setWorkloadEvicted is setWorkload, with Kueue evicting the Workload when
// evicted is set.
func (f *fixture) setWorkloadEvicted(t *testing.T, name string, pods int32, memoryMiB int64, state string, ago time.Duration, evicted bool) string {
	return f.setWorkloadWith(t, name, pods, memoryMiB, state, ago, func(w *workload) {
		if evicted {
			w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{Type: conditionEvicted, Status: metav1.ConditionTrue})
		}
	})
}

// setWorkloadWith is setWorkload with the Workload changed by change,
// unless it is nil, before it is cached.
func (f *fixture) setWorkloadWith(t *testing.T, name string, pods int32, memoryMiB int64, state string, ago time.Duration, change func(*workload)) string {
	t.Helper()
	var w workload
	w.APIVersion, w.Kind = "kueue.x-k8s.io/v1beta2", "Workload"
	w.Namespace, w.Name, w.UID, w.ResourceVersion = "team", name, types.UID("uid-"+name), "7"
	w.Spec.PodSets = []podSet{{Name: "main", Count: pods, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "main", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
			"nvidia.com/gpu": resource.MustParse("1"), "nvidia.com/gpumem": *resource.NewQuantity(memoryMiB, resource.DecimalSI),
		}},
	}}}}}}
	w.Status.Conditions = []metav1.Condition{{Type: conditionQuotaReserved, Status: metav1.ConditionTrue}}
	w.Status.AdmissionChecks = []checkState{{Name: checkName, State: state, LastTransitionTime: metav1.NewTime(f.clock.Now().Add(-ago))}}
	if change != nil {
		change(&w)
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&w)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.c.workloads.GetIndexer().Update(&unstructured.Unstructured{Object: obj}); err != nil {
		t.Fatal(err)
	}
	return "team/" + name
}

func (f *fixture) sync(t *testing.T, key string) {
	t.Helper()
	if err := f.c.sync(context.Background(), key); err != nil {
		t.Fatal(err)
	}
}

// last returns the last state the check applied.
func (f *fixture) last(t *testing.T) checkState {
	t.Helper()
	if len(f.applied) == 0 {
		t.Fatal("the check applied no state")
	}
	return f.applied[len(f.applied)-1]
}

// TestDecide pins the check's answers: Retry, with Kueue's wait, for pods
// that fit the GPUs' total but not their fragments, and for a pod larger
// than any GPU now (a node that holds it may come); Ready, with the key
// of the held room for the pods, when all fit, and the room held;
// Rejected only for a request invalid in itself.
func TestDecide(t *testing.T) {
	f := newFixture(t)
	f.sync(t, f.setWorkload(t, "big", 2, 40000, statePending, 0))
	if st := f.last(t); st.State != stateRetry || st.RequeueAfterSeconds == nil || *st.RequeueAfterSeconds != 15 ||
		!strings.Contains(st.Message, "fits no node's GPUs as they are now") {
		t.Errorf("2 × 40000 MiB on 4 fragments of 30000: applied %+v, want Retry after 15 s with the reason", st)
	}
	if got := f.c.cfg.View.Used("team").MemoryMiB; got != 0 {
		t.Errorf("a Workload sent back holds %d MiB", got)
	}

	key := f.setWorkload(t, "small", 3, 30000, statePending, 0)
	f.sync(t, key)
	st := f.last(t)
	if st.State != stateReady || len(st.PodSetUpdates) != 1 || st.PodSetUpdates[0].Annotations[gpuv1alpha1.GangHoldAnnotation] != "uid-small/main" {
		t.Errorf("3 × 30000 MiB: applied %+v, want Ready with the pods' key uid-small/main", st)
	}
	if got := f.view.GangHeld("uid-small/main"); got != 3 {
		t.Errorf("room held for %d pods, want 3", got)
	}

	f.sync(t, f.setWorkload(t, "larger", 1, 90000, statePending, 0))
	if st := f.last(t); st.State != stateRetry || !strings.Contains(st.Message, "even with every GPU free") {
		t.Errorf("a 90000 MiB pod on 80000 MiB GPUs: applied %+v, want Retry with the reason", st)
	}

	f.sync(t, f.setWorkloadWith(t, "invalid", 1, 1000, statePending, 0, func(w *workload) {
		w.Spec.PodSets[0].Template.Spec.Containers[0].Resources.Limits["nvidia.com/gpucores"] = resource.MustParse("150")
	}))
	if st := f.last(t); st.State != stateRejected || !strings.Contains(st.Message, "invalid GPU request") {
		t.Errorf("a pod asking 150%% of a GPU's cores: applied %+v, want Rejected with the reason", st)
	}

	// Many checks at once never count held room twice: one 30000 MiB
	// fragment is left.
	f.sync(t, f.setWorkload(t, "two", 2, 30000, statePending, 0))
	if st := f.last(t); st.State != stateRetry {
		t.Errorf("2 × 30000 MiB beside small's held room: applied %s, want Retry", st.State)
	}
}

// TestHoldTimesOut pins that held room is released when the hold times
// out, and the requeuer hears where.
func TestHoldTimesOut(t *testing.T) {
	f := newFixture(t)
	key := f.setWorkload(t, "small", 2, 30000, statePending, 0)
	f.sync(t, key)
	f.setWorkload(t, "small", 2, 30000, stateReady, 0)
	f.sync(t, key)
	if got := f.view.GangHeld("uid-small/main"); got != 2 {
		t.Fatalf("room held for %d pods before the timeout, want 2", got)
	}
	f.clock.Step(5 * time.Minute)
	f.sync(t, key)
	if got := f.view.GangHeld("uid-small/main"); got != 0 {
		t.Errorf("room held for %d pods after the timeout, want none", got)
	}
	if len(f.freed) == 0 {
		t.Error("the requeuer heard of no node freed")
	}
	// Not held again on the next event.
	f.sync(t, key)
	if got := f.view.GangHeld("uid-small/main"); got != 0 {
		t.Errorf("room held again for %d pods after it timed out", got)
	}
}

// TestHeldAgainAfterRestart pins that a scheduler started while an
// admitted Workload's room is held holds it again for the pods not yet
// placed, until the first hold's timeout.
func TestHeldAgainAfterRestart(t *testing.T) {
	f := newFixture(t)
	// Of 4 pods admitted, one runs, one is done and one failed, which the
	// Job controller replaces.
	for name, phase := range map[string]corev1.PodPhase{"running": corev1.PodRunning, "done": corev1.PodSucceeded, "failed": corev1.PodFailed} {
		placed := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name,
			Annotations: map[string]string{gpuv1alpha1.GangHoldAnnotation: "uid-small/main"}},
			Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: phase}}
		// The pod as the scheduler's informer keeps it.
		trimmed, err := tracker.Trim(gpurequest.DefaultResourceNames())(placed)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.pods.Add(trimmed); err != nil {
			t.Fatal(err)
		}
	}
	key := f.setWorkload(t, "small", 4, 20000, stateReady, time.Minute)
	f.sync(t, key)
	if got := f.view.GangHeld("uid-small/main"); got != 2 {
		t.Errorf("after a restart room is held for %d pods, want 2: 4 admitted, 1 running, 1 done", got)
	}
	if len(f.applied) != 0 {
		t.Errorf("holding room again wrote %+v to the Workload", f.applied)
	}

	expired := newFixture(t)
	expired.sync(t, expired.setWorkload(t, "late", 1, 30000, stateReady, 6*time.Minute))
	if got := expired.view.GangHeld("uid-late/main"); got != 0 {
		t.Errorf("room held again for %d pods of a hold that had timed out", got)
	}
}

// TestReleasedWhenGone pins that a Workload deleted, or sent back to the
// queue, releases its room.
func TestReleasedWhenGone(t *testing.T) {
	f := newFixture(t)
	key := f.setWorkload(t, "small", 2, 30000, statePending, 0)
	f.sync(t, key)
	obj, _, _ := f.c.workloads.GetIndexer().GetByKey(key)
	if err := f.c.workloads.GetIndexer().Delete(obj); err != nil {
		t.Fatal(err)
	}
	f.sync(t, key)
	if got := f.view.Used("team").MemoryMiB; got != 0 {
		t.Errorf("a deleted Workload's namespace holds %d MiB", got)
	}
}

// TestEvictedNotDecided pins that the check neither decides nor holds
// room for a Workload that Kueue is evicting: Kueue resets the check once
// the eviction is done, and a decision written meanwhile would overwrite
// that reset and leave the Workload out of the queue.
func TestEvictedNotDecided(t *testing.T) {
	f := newFixture(t)
	key := f.setWorkload(t, "small", 2, 30000, statePending, 0)
	f.sync(t, key)
	f.applied = nil
	f.setWorkloadEvicted(t, "small", 2, 30000, statePending, 0, true)
	f.sync(t, key)
	if len(f.applied) != 0 {
		t.Errorf("the check wrote %+v on a Workload being evicted", f.applied)
	}
	if got := f.view.GangHeld("uid-small/main"); got != 0 {
		t.Errorf("room held for %d pods of a Workload being evicted", got)
	}
}
