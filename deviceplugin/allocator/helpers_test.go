package allocator

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/inventory"
	tesserafake "github.com/tessera-gpu/tessera/generated/clientset/versioned/fake"
)

const testNode = "node-1"

var testNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// testDevices are the node's GPUs: GPU-c is unhealthy.
func testDevices() *inventory.Inventory {
	return inventory.New(gpu.Inventory{DriverVersion: "simulated", Devices: []gpu.Device{
		{UUID: "GPU-a", Index: 0, Model: "A100", MemoryMiB: 40960, Health: gpu.Healthy()},
		{UUID: "GPU-b", Index: 1, Model: "A100", MemoryMiB: 40960, Health: gpu.Healthy()},
		{UUID: "GPU-c", Index: 2, Model: "A100", MemoryMiB: 40960, Health: gpu.Unhealthy("XID 79 critical error")},
	}})
}

func testPod(name string, uid types.UID) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid},
		Spec:       corev1.PodSpec{NodeName: testNode},
	}
}

// container returns a container allocation with devices "uuid:memory:cores".
func container(name string, kind gpuv1alpha1.ContainerKind, devices ...gpuv1alpha1.DeviceAllocation) gpuv1alpha1.ContainerAllocation {
	return gpuv1alpha1.ContainerAllocation{Name: name, Kind: kind, Devices: devices}
}

func dev(uuid string, index int32, memory int64, cores int32) gpuv1alpha1.DeviceAllocation {
	return gpuv1alpha1.DeviceAllocation{UUID: uuid, Index: index, MemoryMiB: memory, Cores: cores}
}

func testAllocation(name string, uid types.UID, node string, containers ...gpuv1alpha1.ContainerAllocation) *gpuv1alpha1.GPUAllocation {
	return &gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(testNow), ResourceVersion: "1"},
		Spec:       gpuv1alpha1.GPUAllocationSpec{PodUID: uid, NodeName: node, Containers: containers},
	}
}

// unitHarness is an Allocator over fake clients whose caches hold exactly
// the objects given.
type unitHarness struct {
	alloc   *Allocator
	tessera *tesserafake.Clientset
	kube    *kubefake.Clientset
	ctx     context.Context
}

func newUnitHarness(t *testing.T, pods []*corev1.Pod, allocs []*gpuv1alpha1.GPUAllocation, resp ResponseConfig) *unitHarness {
	t.Helper()
	return newStaleHarness(t, pods, allocs, allocs, resp)
}

// newStaleHarness is newUnitHarness with a cache that holds other versions
// of the allocations than the API server.
func newStaleHarness(t *testing.T, pods []*corev1.Pod, apiAllocs, cachedAllocs []*gpuv1alpha1.GPUAllocation, resp ResponseConfig) *unitHarness {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	var tObjs, kObjs []runtime.Object
	podIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, a := range apiAllocs {
		tObjs = append(tObjs, a)
	}
	for _, p := range pods {
		kObjs = append(kObjs, p)
		if err := podIndexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	h := &unitHarness{tessera: tesserafake.NewClientset(tObjs...), kube: kubefake.NewClientset(kObjs...), ctx: ctx}
	h.tessera.PrependReactor("update", "gpuallocations", h.optimisticConcurrency)
	cached := newNodeAllocations(h.tessera, corelisters.NewPodLister(podIndexer), "")
	for _, a := range cachedAllocs {
		cached.byPod[cache.MetaObjectToName(a)] = a
	}
	h.alloc = New(Config{
		NodeName:      testNode,
		Tessera:       h.tessera,
		Kube:          h.kube,
		Allocations:   cached,
		Pods:          corelisters.NewPodLister(podIndexer),
		Devices:       testDevices(),
		Clock:         testingclock.NewFakePassiveClock(testNow),
		LookupTimeout: 50 * time.Millisecond,
		PollInterval:  10 * time.Millisecond,
		Response:      resp,
	})
	return h
}

// optimisticConcurrency makes status updates of the fake clientset fail
// with a conflict when they carry another resourceVersion than the stored
// object, as the API server does; the simple fake would accept them.
func (h *unitHarness) optimisticConcurrency(action k8stesting.Action) (bool, runtime.Object, error) {
	update, ok := action.(k8stesting.UpdateAction)
	if !ok || update.GetSubresource() != "status" {
		return false, nil, nil
	}
	obj := update.GetObject().(*gpuv1alpha1.GPUAllocation).DeepCopy()
	gvr := gpuv1alpha1.SchemeGroupVersion.WithResource("gpuallocations")
	stored, err := h.tessera.Tracker().Get(gvr, obj.Namespace, obj.Name)
	if err != nil {
		return true, nil, err
	}
	storedRV := stored.(*gpuv1alpha1.GPUAllocation).ResourceVersion
	if obj.ResourceVersion != storedRV {
		return true, nil, apierrors.NewConflict(gvr.GroupResource(), obj.Name, fmt.Errorf("resourceVersion %q is not the stored %q", obj.ResourceVersion, storedRV))
	}
	rv, _ := strconv.Atoi(storedRV)
	obj.ResourceVersion = strconv.Itoa(rv + 1)
	return true, obj, h.tessera.Tracker().Update(gvr, obj, obj.Namespace)
}

// stored returns the allocation as the API server holds it.
func (h *unitHarness) stored(t *testing.T, name string) *gpuv1alpha1.GPUAllocation {
	t.Helper()
	a, err := h.tessera.GpuV1alpha1().GPUAllocations("ns").Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// statusWrites counts the status updates the allocator made.
func (h *unitHarness) statusWrites() int {
	n := 0
	for _, a := range h.tessera.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}
