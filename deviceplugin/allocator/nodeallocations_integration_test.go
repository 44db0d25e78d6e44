package allocator

import (
	"context"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/klog/v2/ktesting"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// TestNodeAllocationsOnTheAPIServer follows a node's pods on a real
// kube-apiserver through the field-selected watch the plugin keeps: it
// holds the allocations of the node's GPU pods as the scheduler makes
// them (allocation, then binding), none of another node's, drops each as
// its pod goes, and a plugin started anew holds exactly the same.
func TestNodeAllocationsOnTheAPIServer(t *testing.T) {
	cp := framework.Start(t, framework.Options{})
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	place := func(name, node string, phase gpuv1alpha1.AllocationPhase) {
		t.Helper()
		main := gpuPod(name, "", 1).Spec.Containers[0]
		main.Image = "cuda"
		pod, err := cp.Kube.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{SchedulerName: "none", Containers: []corev1.Container{main}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		alloc := testAllocation(name, pod.UID, node, container("main", gpuv1alpha1.ContainerApp, dev("GPU-a", 0, 1000, 0)))
		alloc.Namespace, alloc.ResourceVersion, alloc.CreationTimestamp = "default", "", metav1.Time{}
		created, err := cp.Tessera.GpuV1alpha1().GPUAllocations("default").Create(ctx, alloc, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if phase != "" {
			created.Status = gpuv1alpha1.GPUAllocationStatus{Phase: phase, ServedContainers: []string{"main"}}
			if _, err := cp.Tessera.GpuV1alpha1().GPUAllocations("default").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
		if err := cp.Kube.CoreV1().Pods("default").Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// start runs a plugin's view of the node's allocations until the test
	// ends, as the plugin does: the node's pods watched by field.
	start := func() *NodeAllocations {
		t.Helper()
		factory := informers.NewSharedInformerFactoryWithOptions(cp.Kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", testNode).String()
		}))
		allocs, err := NewNodeAllocations(cp.Tessera, factory.Core().V1().Pods().Informer(), testResource)
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		factory.Start(runCtx.Done())
		factory.WaitForCacheSync(runCtx.Done())
		done := make(chan struct{})
		go func() {
			defer close(done)
			allocs.Run(runCtx)
		}()
		t.Cleanup(func() {
			stop()
			<-done
			factory.Shutdown()
		})
		return allocs
	}
	// holds waits until allocs holds exactly the allocations named, in the
	// phases given.
	holds := func(allocs *NodeAllocations, want map[string]gpuv1alpha1.AllocationPhase) {
		t.Helper()
		var got map[string]gpuv1alpha1.AllocationPhase
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			got = map[string]gpuv1alpha1.AllocationPhase{}
			for _, a := range allocs.List() {
				got[a.Name] = a.Status.Phase
			}
			return allocs.HasSynced() && maps.Equal(got, want), nil
		})
		if err != nil {
			t.Fatalf("holding %v, want %v: %v", got, want, err)
		}
	}

	place("served", testNode, gpuv1alpha1.AllocationAllocated)
	first := start()
	holds(first, map[string]gpuv1alpha1.AllocationPhase{"served": gpuv1alpha1.AllocationAllocated})

	place("next", testNode, "")
	place("elsewhere", "node-2", "")
	holds(first, map[string]gpuv1alpha1.AllocationPhase{"served": gpuv1alpha1.AllocationAllocated, "next": gpuv1alpha1.AllocationPending})

	if err := cp.Kube.CoreV1().Pods("default").Delete(ctx, "served", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	holds(first, map[string]gpuv1alpha1.AllocationPhase{"next": gpuv1alpha1.AllocationPending})
	holds(start(), map[string]gpuv1alpha1.AllocationPhase{"next": gpuv1alpha1.AllocationPending})
}
