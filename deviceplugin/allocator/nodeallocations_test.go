package allocator

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	tesserafake "github.com/tessera-gpu/tessera/generated/clientset/versioned/fake"
)

const testResource = corev1.ResourceName("nvidia.com/gpu")

// gpuPod is a pod on the test node whose one container asks for gpus of
// the test resource (none: it asks for no GPU).
func gpuPod(name string, uid types.UID, gpus int64) *corev1.Pod {
	pod := testPod(name, uid)
	c := corev1.Container{Name: "main"}
	if gpus > 0 {
		c.Resources.Limits = corev1.ResourceList{testResource: *resource.NewQuantity(gpus, resource.DecimalSI)}
	}
	pod.Spec.Containers = []corev1.Container{c}
	return pod
}

// nodeAllocationsHarness runs NodeAllocations over fake clients, the pods
// followed through a real informer.
type nodeAllocationsHarness struct {
	ctx     context.Context
	kube    *kubefake.Clientset
	tessera *tesserafake.Clientset
	allocs  *NodeAllocations
}

func startNodeAllocations(t *testing.T, pods []*corev1.Pod, allocs []*gpuv1alpha1.GPUAllocation) *nodeAllocationsHarness {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	h := &nodeAllocationsHarness{ctx: ctx, kube: kubefake.NewClientset(), tessera: tesserafake.NewClientset()}
	for _, p := range pods {
		h.createPod(t, p)
	}
	for _, a := range allocs {
		h.createAllocation(t, a)
	}
	factory := informers.NewSharedInformerFactory(h.kube, 0)
	informer := factory.Core().V1().Pods().Informer()
	var err error
	if h.allocs, err = NewNodeAllocations(h.tessera, informer, testResource); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.allocs.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		factory.Shutdown()
	})
	h.waitFor(t, "the pods' allocations read at start", func([]*gpuv1alpha1.GPUAllocation) bool { return h.allocs.HasSynced() })
	return h
}

func (h *nodeAllocationsHarness) createPod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if _, err := h.kube.CoreV1().Pods(pod.Namespace).Create(h.ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (h *nodeAllocationsHarness) updatePod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if _, err := h.kube.CoreV1().Pods(pod.Namespace).Update(h.ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (h *nodeAllocationsHarness) createAllocation(t *testing.T, a *gpuv1alpha1.GPUAllocation) {
	t.Helper()
	if _, err := h.tessera.GpuV1alpha1().GPUAllocations(a.Namespace).Create(h.ctx, a, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// names returns the names of the allocations held, sorted.
func (h *nodeAllocationsHarness) names() []string {
	var out []string
	for _, a := range h.allocs.List() {
		out = append(out, a.Name)
	}
	slices.Sort(out)
	return out
}

// waitFor waits until ok holds of the allocations held.
func (h *nodeAllocationsHarness) waitFor(t *testing.T, what string, ok func([]*gpuv1alpha1.GPUAllocation) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(h.ctx, 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return ok(h.allocs.List()), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; holding %v", what, err, h.names())
	}
}

// holds says whether the allocations hold exactly names.
func (h *nodeAllocationsHarness) holds(names ...string) func([]*gpuv1alpha1.GPUAllocation) bool {
	return func([]*gpuv1alpha1.GPUAllocation) bool { return slices.Equal(h.names(), names) }
}

// read says whether the allocation of that name was read.
func (h *nodeAllocationsHarness) read(name string) bool {
	return slices.ContainsFunc(h.tessera.Actions(), func(a k8stesting.Action) bool {
		get, ok := a.(k8stesting.GetAction)
		return ok && get.GetResource().Resource == "gpuallocations" && get.GetName() == name
	})
}

// NodeAllocations holds the allocations of the node's pods that ask for
// GPUs, from start and as pods come, and drops each once its pod ends or
// goes; it reads no allocation for a pod that asks for no GPU, and keeps
// none that belongs to an earlier pod of the same name.
func TestNodeAllocationsFollowTheNodesPods(t *testing.T) {
	running := testAllocation("running", "uid-running", testNode, container("main", gpuv1alpha1.ContainerApp, dev("GPU-a", 0, 1000, 0)))
	earlier := testAllocation("renamed", "uid-earlier", testNode, container("main", gpuv1alpha1.ContainerApp, dev("GPU-a", 0, 1000, 0)))
	h := startNodeAllocations(t,
		[]*corev1.Pod{gpuPod("running", "uid-running", 1), gpuPod("cpu-only", "uid-cpu", 0), gpuPod("renamed", "uid-renamed", 1)},
		[]*gpuv1alpha1.GPUAllocation{running, earlier})
	if got, want := h.names(), []string{"running"}; !slices.Equal(got, want) {
		t.Fatalf("at start holding %v, want %v", got, want)
	}
	if !h.read("running") || h.read("cpu-only") {
		t.Errorf("read running's allocation: %t, cpu-only's: %t; want only running's", h.read("running"), h.read("cpu-only"))
	}

	// The scheduler writes the allocation, then binds the pod.
	h.createAllocation(t, testAllocation("next", "uid-next", testNode, container("main", gpuv1alpha1.ContainerApp, dev("GPU-b", 1, 1000, 0))))
	h.createPod(t, gpuPod("next", "uid-next", 1))
	h.waitFor(t, "the new pod's allocation", h.holds("next", "running"))

	// A pod seen before its allocation is read again on its next event.
	late := gpuPod("late", "uid-late", 1)
	h.createPod(t, late)
	h.createAllocation(t, testAllocation("late", "uid-late", testNode, container("main", gpuv1alpha1.ContainerApp, dev("GPU-b", 1, 1000, 0))))
	late.Status.Phase = corev1.PodPending
	h.updatePod(t, late)
	h.waitFor(t, "the allocation that came after its pod", h.holds("late", "next", "running"))

	ended := gpuPod("running", "uid-running", 1)
	ended.Status.Phase = corev1.PodSucceeded
	h.updatePod(t, ended)
	if err := h.kube.CoreV1().Pods("ns").Delete(h.ctx, "next", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor(t, "the ended and the deleted pods' allocations dropped", h.holds("late"))
}

// What the plugin writes is held at once; a read that answers after the
// write does not undo it; and a write for a pod that has gone is not
// held, so nothing outlives its pod.
func TestNodeAllocationsKeepThePluginsWrites(t *testing.T) {
	pending := testAllocation("p", "uid-p", testNode, container("main", gpuv1alpha1.ContainerApp, dev("GPU-a", 0, 1000, 0)))
	pending.UID = "alloc-p"
	h := startNodeAllocations(t, []*corev1.Pod{gpuPod("p", "uid-p", 1)}, []*gpuv1alpha1.GPUAllocation{pending})

	served := pending.DeepCopy()
	served.Status = gpuv1alpha1.GPUAllocationStatus{Phase: gpuv1alpha1.AllocationAllocated, ServedContainers: []string{"main"}}
	h.allocs.Wrote(served)
	if got := h.allocs.List(); len(got) != 1 || got[0].Status.Phase != gpuv1alpha1.AllocationAllocated {
		t.Fatalf("after the plugin's write holding %v, want p Allocated", got)
	}
	h.allocs.record(pending.DeepCopy())
	if got := h.allocs.List(); len(got) != 1 || got[0].Status.Phase != gpuv1alpha1.AllocationAllocated {
		t.Fatalf("a read older than the plugin's write replaced it: holding %v", got)
	}

	if err := h.kube.CoreV1().Pods("ns").Delete(h.ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor(t, "the deleted pod's allocation dropped", h.holds())
	h.allocs.Wrote(served)
	if got := h.names(); len(got) != 0 {
		t.Errorf("a write after the pod went is held: %v", got)
	}
}
