package clientlib

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	gpuapply "github.com/tessera-gpu/tessera/generated/applyconfiguration/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/generated/clientset/versioned/fake"
)

// manager applies specs and statusManager statuses. They differ because the
// fake clientset, unlike kube-apiserver, does not record which subresource
// an apply was for: one manager applying both would own only the last.
const (
	manager       = "clientlib-test"
	statusManager = "clientlib-test-status"
)

// TestFakeGPUNode writes and reads a GPUNode through the fake clientset the
// way a program's unit test would: watch, create, apply, update status,
// list, and an Extract-modify-apply loop.
func TestFakeGPUNode(t *testing.T) {
	ctx := context.Background()
	nodes := fake.NewClientset().GpuV1alpha1().GPUNodes()
	w, err := nodes.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	if _, err := nodes.Create(ctx, &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	applied, err := nodes.Apply(ctx, gpuapply.GPUNode("node-b").
		WithSpec(gpuapply.GPUNodeSpec().WithCordonedDevices("GPU-1")), metav1.ApplyOptions{FieldManager: manager})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if got := applied.Spec.CordonedDevices; len(got) != 1 || got[0] != "GPU-1" {
		t.Errorf("applied spec.cordonedDevices = %v, want [GPU-1]", got)
	}

	node, err := nodes.Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Devices = []gpuv1alpha1.GPUDevice{{UUID: "GPU-0", Model: "Tesla T4", MemoryMiB: 15360, Cores: 100, ShareLimit: 10, Health: gpuv1alpha1.GPUHealthy}}
	node.Status.GPUCount = 1
	if _, err := nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status: %v", err)
	}
	if _, err := nodes.ApplyStatus(ctx, gpuapply.GPUNode("node-b").
		WithStatus(gpuapply.GPUNodeStatus().WithDriverVersion("580.1")), metav1.ApplyOptions{FieldManager: statusManager}); err != nil {
		t.Fatalf("apply status: %v", err)
	}

	list, err := nodes.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(list.Items) != 2 {
		t.Fatalf("listed %d GPUNodes, want 2", len(list.Items))
	}
	byName := map[string]gpuv1alpha1.GPUNode{}
	for _, n := range list.Items {
		byName[n.Name] = n
	}
	if d := byName["node-a"].Status.Devices; len(d) != 1 || d[0].UUID != "GPU-0" {
		t.Errorf("node-a status.devices = %v, want GPU-0", d)
	}
	if v := byName["node-b"].Status.DriverVersion; v != "580.1" {
		t.Errorf("node-b status.driverVersion = %q, want 580.1", v)
	}

	// A read-modify-apply loop: extract what this manager owns, change it,
	// apply it back.
	current, err := nodes.Get(ctx, "node-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mine, err := gpuapply.ExtractGPUNode(current, manager)
	if err != nil {
		t.Fatalf("extract: %v", err)
	}
	if mine.Spec == nil || len(mine.Spec.CordonedDevices) != 1 {
		t.Fatalf("extracted spec %+v, want the one cordoned GPU this manager applied", mine.Spec)
	}
	mine.Spec.CordonedDevices = append(mine.Spec.CordonedDevices, "GPU-2")
	reapplied, err := nodes.Apply(ctx, mine, metav1.ApplyOptions{FieldManager: manager})
	if err != nil {
		t.Fatalf("apply after extract: %v", err)
	}
	if got := reapplied.Spec.CordonedDevices; len(got) != 2 {
		t.Errorf("spec.cordonedDevices after the loop = %v, want GPU-1 and GPU-2", got)
	}

	wantEvents(t, w, watch.Added, watch.Added, watch.Modified, watch.Modified, watch.Modified)
}

// TestFakeGPUAllocation does the same for a namespaced GPUAllocation.
func TestFakeGPUAllocation(t *testing.T) {
	ctx := context.Background()
	allocs := fake.NewClientset().GpuV1alpha1().GPUAllocations("team-a")
	w, err := allocs.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	spec := gpuv1alpha1.GPUAllocationSpec{PodUID: "uid-1", NodeName: "node-a", Containers: []gpuv1alpha1.ContainerAllocation{{
		Name: "cuda", Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-0", MemoryMiB: 4000, Cores: 30}},
	}}}
	if _, err := allocs.Create(ctx, &gpuv1alpha1.GPUAllocation{ObjectMeta: metav1.ObjectMeta{Name: "pod-1"}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := allocs.Apply(ctx, gpuapply.GPUAllocation("pod-2", "team-a").WithSpec(gpuapply.GPUAllocationSpec().
		WithPodUID("uid-2").WithNodeName("node-a").
		WithContainers(gpuapply.ContainerAllocation().WithName("cuda").
			WithDevices(gpuapply.DeviceAllocation().WithUUID("GPU-1").WithMemoryMiB(2000)))),
		metav1.ApplyOptions{FieldManager: manager}); err != nil {
		t.Fatalf("apply: %v", err)
	}

	alloc, err := allocs.Get(ctx, "pod-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alloc.Status.Phase = gpuv1alpha1.AllocationAllocated
	if _, err := allocs.UpdateStatus(ctx, alloc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status: %v", err)
	}
	if _, err := allocs.ApplyStatus(ctx, gpuapply.GPUAllocation("pod-2", "team-a").
		WithStatus(gpuapply.GPUAllocationStatus().WithPhase(gpuv1alpha1.AllocationFailed).WithMessage("no such GPU")),
		metav1.ApplyOptions{FieldManager: statusManager}); err != nil {
		t.Fatalf("apply status: %v", err)
	}

	list, err := allocs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	phases := map[string]gpuv1alpha1.AllocationPhase{}
	for _, a := range list.Items {
		phases[a.Name] = a.Status.Phase
	}
	want := map[string]gpuv1alpha1.AllocationPhase{"pod-1": gpuv1alpha1.AllocationAllocated, "pod-2": gpuv1alpha1.AllocationFailed}
	if len(phases) != len(want) || phases["pod-1"] != want["pod-1"] || phases["pod-2"] != want["pod-2"] {
		t.Errorf("listed phases %v, want %v", phases, want)
	}

	current, err := allocs.Get(ctx, "pod-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mine, err := gpuapply.ExtractGPUAllocation(current, manager)
	if err != nil {
		t.Fatalf("extract: %v", err)
	}
	if mine.Spec == nil || mine.Spec.PodUID == nil || *mine.Spec.PodUID != "uid-2" {
		t.Fatalf("extracted spec %+v, want the spec this manager applied", mine.Spec)
	}
	if mine.Status != nil {
		t.Errorf("extracted status %+v from the spec's manager, want none", mine.Status)
	}

	wantEvents(t, w, watch.Added, watch.Added, watch.Modified, watch.Modified)
}

// wantEvents reads len(want) events from w and checks their types.
func wantEvents(t *testing.T, w watch.Interface, want ...watch.EventType) {
	t.Helper()
	for i, typ := range want {
		select {
		case e := <-w.ResultChan():
			if e.Type != typ {
				t.Errorf("watch event %d is %s, want %s", i, e.Type, typ)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("watch event %d (%s) never came", i, typ)
		}
	}
}
