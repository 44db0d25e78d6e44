package gangfit

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// TestSyncedOnlyOnceRoomIsHeld pins that a starting check says it has
// synced, which lets the scheduler place pods, only once the room of
// every Workload admitted before the start is held again: every
// Workload the informer lists has reached the check, not just the
// informer's cache.
func TestSyncedOnlyOnceRoomIsHeld(t *testing.T) {
	f := newFixture(t)
	// Many Workloads, so that the informer may have listed them all
	// before its handler has handed every one to the check.
	const admitted = 400
	// A node with room for every one.
	gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}
	for i := range admitted / 10 {
		gn.Status.Devices = append(gn.Status.Devices, gpuv1alpha1.GPUDevice{UUID: fmt.Sprintf("big%d", i), Index: int32(i), Model: "A100",
			MemoryMiB: 80000, Cores: 100, ShareLimit: 10, Health: gpuv1alpha1.GPUHealthy})
	}
	f.view.SetGPUNode(gn)
	f.view.SetLease("n2", f.clock.Now())
	f.setNode(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range admitted {
		key := f.setWorkload(t, fmt.Sprintf("admitted-%d", i), 1, 100, stateReady, time.Minute)
		obj, _, _ := f.c.workloads.GetIndexer().GetByKey(key)
		w := obj.(*unstructured.Unstructured).DeepCopy()
		w.SetResourceVersion("")
		if _, err := f.c.cfg.Dynamic.Resource(workloads).Namespace("team").Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ac, _, _ := f.c.checks.GetIndexer().GetByKey(checkName)
	if _, err := f.c.cfg.Dynamic.Resource(admissionChecks).Create(ctx, ac.(*unstructured.Unstructured), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// A check of its own, started as a scheduler starts, whose informers
	// list the Workloads from the API.
	discovery := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}
	discovery.Resources = []*metav1.APIResourceList{{GroupVersion: workloads.GroupVersion().String(),
		APIResources: []metav1.APIResource{{Name: workloads.Resource}}}}
	cfg := f.c.cfg
	cfg.Discovery = discovery
	cfg.Kube = kubefake.NewClientset()
	cfg.LeaseNamespace, cfg.LeaseName = "kube-system", "gang-fit"
	cfg.NodesSynced = func() bool { return true }
	cfg.ViewSynced = func() bool { return true }
	c := New(cfg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return c.HasSynced(), nil
	}); err != nil {
		t.Fatal(err)
	}
	held := 0
	for i := range admitted {
		held += f.view.GangHeld(fmt.Sprintf("uid-admitted-%d/main", i))
	}
	if held != admitted {
		t.Fatalf("synced with room held for %d pods of %d admitted", held, admitted)
	}
}
