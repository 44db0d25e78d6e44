package allocator

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/hamicore"
)

// TestAllocateDecidesOnTheAPIServerNotAStaleCache pins that a cache behind
// the plugin's own writes never fails or misserves an allocation.
func TestAllocateDecidesOnTheAPIServerNotAStaleCache(t *testing.T) {
	twoContainers := testAllocation("p", "uid-p", testNode,
		container("init", gpuv1alpha1.ContainerInit, dev("GPU-a", 0, 1000, 0)),
		container("main", gpuv1alpha1.ContainerApp, dev("GPU-a", 0, 2000, 0), dev("GPU-b", 1, 2000, 0)))
	initServed := twoContainers.DeepCopy()
	initServed.Status = gpuv1alpha1.GPUAllocationStatus{Phase: gpuv1alpha1.AllocationPending, ServedContainers: []string{"init"}}
	initServed.ResourceVersion = "2"
	allocated := testAllocation("old", "uid-old", testNode, container("main", gpuv1alpha1.ContainerApp, dev("GPU-b", 1, 500, 0)))
	cachedOld := allocated.DeepCopy()
	cachedOld.CreationTimestamp = metav1.NewTime(testNow.Add(-1))
	allocated.Status = gpuv1alpha1.GPUAllocationStatus{Phase: gpuv1alpha1.AllocationAllocated, ServedContainers: []string{"main"}}
	allocated.ResourceVersion = "2"

	tests := []struct {
		name       string
		api        []*gpuv1alpha1.GPUAllocation
		cached     []*gpuv1alpha1.GPUAllocation
		req        []int
		wantEnv    string
		wantServed map[string][]string
	}{
		{
			name: "cache has not seen the init container served",
			api:  []*gpuv1alpha1.GPUAllocation{initServed}, cached: []*gpuv1alpha1.GPUAllocation{twoContainers},
			req: []int{2}, wantEnv: "GPU-a,GPU-b",
			wantServed: map[string][]string{"p": {"init", "main"}},
		},
		{
			name: "cache still shows the previous pod in flight and not the next one",
			api:  []*gpuv1alpha1.GPUAllocation{allocated, twoContainers}, cached: []*gpuv1alpha1.GPUAllocation{cachedOld},
			req: []int{1}, wantEnv: "GPU-a",
			wantServed: map[string][]string{"p": {"init"}, "old": {"main"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newStaleHarness(t, []*corev1.Pod{testPod("p", "uid-p"), testPod("old", "uid-old")}, tt.api, tt.cached, ResponseConfig{})
			resp, err := h.alloc.Allocate(h.ctx, request(tt.req...))
			if err != nil {
				t.Fatalf("Allocate: %v", err)
			}
			if got := resp.ContainerResponses[0].Envs[hamicore.EnvVisibleDevices]; got != tt.wantEnv {
				t.Errorf("visible devices %q, want %q", got, tt.wantEnv)
			}
			for name, want := range tt.wantServed {
				if got := h.stored(t, name).Status.ServedContainers; !reflect.DeepEqual(got, want) {
					t.Errorf("%s served %v, want %v", name, got, want)
				}
			}
		})
	}
}

// TestPreferredFollowsThePluginsOwnLastWrite pins that right after serving
// a container, before the cache has caught up, the kubelet is steered to
// the next container's GPUs, not the one just served.
func TestPreferredFollowsThePluginsOwnLastWrite(t *testing.T) {
	alloc := testAllocation("p", "uid-p", testNode,
		container("init", gpuv1alpha1.ContainerInit, dev("GPU-a", 0, 1000, 0)),
		container("main", gpuv1alpha1.ContainerApp, dev("GPU-b", 1, 2000, 0)))
	h := newUnitHarness(t, []*corev1.Pod{testPod("p", "uid-p")}, []*gpuv1alpha1.GPUAllocation{alloc}, ResponseConfig{})
	if _, err := h.alloc.Allocate(h.ctx, request(1)); err != nil {
		t.Fatal(err)
	}
	// The cache still shows nothing served.
	resp, err := h.alloc.Preferred(h.ctx, &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
		AvailableDeviceIDs: []string{"GPU-a::1", "GPU-b::0"}, AllocationSize: 1,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.ContainerResponses[0].DeviceIDs; len(got) != 1 || got[0] != "GPU-b::0" {
		t.Errorf("preferred %v, want main's GPU-b::0", got)
	}
	// And Allocate serves main without a conflict round trip.
	before := h.statusWrites()
	r, err := h.alloc.Allocate(h.ctx, request(1))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.ContainerResponses[0].Envs[hamicore.EnvVisibleDevices]; got != "GPU-b" {
		t.Errorf("second Allocate served %q, want GPU-b", got)
	}
	if n := h.statusWrites() - before; n != 1 {
		t.Errorf("%d status writes for the second container, want 1", n)
	}
	if got := h.stored(t, "p").Status.Phase; got != gpuv1alpha1.AllocationAllocated {
		t.Errorf("phase %s, want Allocated", got)
	}
}

// When the kubelet asks before the plugin has read the pod's allocation,
// the plugin reads it by name, as it reads every allocation, and does not
// list the node's allocations on the API server.
func TestAllocateReadsAnAllocationNotYetReadByName(t *testing.T) {
	alloc := testAllocation("p", "uid-p", testNode,
		container("init", gpuv1alpha1.ContainerInit, dev("GPU-a", 0, 1000, 0)),
		container("main", gpuv1alpha1.ContainerApp, dev("GPU-b", 1, 2000, 0)))
	h := newStaleHarness(t, []*corev1.Pod{testPod("p", "uid-p")}, []*gpuv1alpha1.GPUAllocation{alloc}, nil, ResponseConfig{})
	resp, err := h.alloc.Preferred(h.ctx, &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
		AvailableDeviceIDs: []string{"GPU-b::0", "GPU-a::1"}, AllocationSize: 1,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.ContainerResponses[0].DeviceIDs; len(got) != 1 || got[0] != "GPU-a::1" {
		t.Errorf("preferred %v, want init's GPU-a::1", got)
	}
	for i, want := range []string{"GPU-a", "GPU-b"} {
		r, err := h.alloc.Allocate(h.ctx, request(1))
		if err != nil {
			t.Fatalf("Allocate %d: %v", i, err)
		}
		if got := r.ContainerResponses[0].Envs[hamicore.EnvVisibleDevices]; got != want {
			t.Errorf("Allocate %d served %q, want %s", i, got, want)
		}
	}
	for _, a := range h.tessera.Actions() {
		if a.GetVerb() == "list" {
			t.Errorf("listed %s on the API server", a.GetResource().Resource)
		}
	}
	if got := h.stored(t, "p").Status.Phase; got != gpuv1alpha1.AllocationAllocated {
		t.Errorf("phase %s, want Allocated", got)
	}
}
