package integration

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/generated/informers/externalversions"
)

// TestClientsetRoundTrip drives both kinds through the generated clientset:
// create, get, list, watch and update status, and checks that an informer's
// lister sees every change.
func TestClientsetRoundTrip(t *testing.T) {
	cp, client, ctx := startAPI(t)

	factory := externalversions.NewSharedInformerFactory(cp.Tessera, 0)
	nodeLister := factory.Gpu().V1alpha1().GPUNodes().Lister()
	allocLister := factory.Gpu().V1alpha1().GPUAllocations().Lister()
	informersCtx, stopInformers := context.WithCancel(ctx)
	factory.Start(informersCtx.Done())
	defer func() { stopInformers(); factory.Shutdown() }()
	factory.WaitForCacheSync(ctx.Done())

	watcher, err := client.GPUNodes().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watching GPUNodes: %v", err)
	}
	defer watcher.Stop()

	node, err := client.GPUNodes().Create(ctx, &gpuv1alpha1.GPUNode{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
		Spec:       gpuv1alpha1.GPUNodeSpec{CordonedDevices: []string{"GPU-x"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating GPUNode: %v", err)
	}
	expectEvent(t, watcher, watch.Added, "node-a")

	node.Status = gpuNodeStatus("A100", "A100")
	node, err = client.GPUNodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating GPUNode status: %v", err)
	}
	expectEvent(t, watcher, watch.Modified, "node-a")
	if got, err := client.GPUNodes().Get(ctx, "node-a", metav1.GetOptions{}); err != nil || len(got.Status.Devices) != 2 {
		t.Fatalf("getting GPUNode after status update: devices=%v err=%v", got.Status.Devices, err)
	}

	// The status subresource ignores spec, and the main resource ignores status.
	node.Spec.CordonedDevices = nil
	node.Status.DriverVersion = "changed-through-status"
	if _, err := client.GPUNodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating status: %v", err)
	}
	got, err := client.GPUNodes().Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.CordonedDevices) != 1 || got.Status.DriverVersion != "changed-through-status" {
		t.Errorf("status update changed spec or lost status: spec=%v driver=%q", got.Spec, got.Status.DriverVersion)
	}

	// The extender creates allocations with no status: the CRD's default
	// shows them as Pending to every reader, watches included.
	allocWatch, err := client.GPUAllocations("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watching GPUAllocations: %v", err)
	}
	defer allocWatch.Stop()
	alloc, err := client.GPUAllocations("default").Create(ctx, gpuAllocation("pod-1", "node-a", "uid-1", "GPU-A100-a", 4000), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating GPUAllocation: %v", err)
	}
	if alloc.Status.Phase != gpuv1alpha1.AllocationPending {
		t.Errorf("created allocation has phase %q, want Pending", alloc.Status.Phase)
	}
	if got, err := client.GPUAllocations("default").Get(ctx, "pod-1", metav1.GetOptions{}); err != nil || got.Status.Phase != gpuv1alpha1.AllocationPending {
		t.Errorf("getting the new allocation: phase %q, err %v; want Pending", got.Status.Phase, err)
	}
	select {
	case ev := <-allocWatch.ResultChan():
		if a, ok := ev.Object.(*gpuv1alpha1.GPUAllocation); !ok || ev.Type != watch.Added || a.Status.Phase != gpuv1alpha1.AllocationPending {
			t.Errorf("watch sent %s %+v, want the allocation added as Pending", ev.Type, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event for the new allocation")
	}
	alloc.Status.Phase = gpuv1alpha1.AllocationAllocated
	alloc.Status.ServedContainers = []string{"main"}
	if _, err := client.GPUAllocations("default").UpdateStatus(ctx, alloc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating GPUAllocation status: %v", err)
	}
	list, err := client.GPUAllocations("").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("listing GPUAllocations: %d items, err=%v", len(list.Items), err)
	}
	// A device plugin lists only its own node's allocations.
	for node, want := range map[string]int{"node-a": 1, "node-b": 0} {
		list, err := client.GPUAllocations("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err != nil || len(list.Items) != want {
			t.Errorf("listing GPUAllocations of %s by field selector: %d items (err=%v), want %d", node, len(list.Items), err, want)
		}
	}

	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		n, err := nodeLister.Get("node-a")
		if err != nil || n.Status.DriverVersion != "changed-through-status" {
			return false, nil
		}
		a, err := allocLister.GPUAllocations("default").Get("pod-1")
		return err == nil && a.Status.Phase == gpuv1alpha1.AllocationAllocated, nil
	})
	if err != nil {
		t.Fatalf("the informers' listers never saw the latest GPUNode and GPUAllocation: %v", err)
	}

	// The spec of an allocation is immutable once written.
	alloc, err = client.GPUAllocations("default").Get(ctx, "pod-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alloc.Spec.NodeName = "node-b"
	_, err = client.GPUAllocations("default").Update(ctx, alloc, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("changing an allocation's spec: got %v, want Invalid (spec is immutable)", err)
	}
}

func expectEvent(t *testing.T, w watch.Interface, typ watch.EventType, name string) {
	t.Helper()
	select {
	case ev := <-w.ResultChan():
		n, ok := ev.Object.(*gpuv1alpha1.GPUNode)
		if ev.Type != typ || !ok || n.Name != name {
			t.Fatalf("watch event: got %s %T, want %s of %s", ev.Type, ev.Object, typ, name)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s watch event for %s", typ, name)
	}
}
