package allocator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/vdevice"
)

// kubeletPods is a pod-resources API that lists the given pods, or fails.
type kubeletPods struct {
	pods  []string
	err   error
	calls int
}

func (k *kubeletPods) Pods(context.Context) (sets.Set[types.NamespacedName], error) {
	k.calls++
	if k.err != nil {
		return nil, k.err
	}
	out := sets.New[types.NamespacedName]()
	for _, name := range k.pods {
		out.Insert(types.NamespacedName{Namespace: "ns", Name: name})
	}
	return out, nil
}

// With several allocations in flight on the node, Allocate serves the one
// whose pod the kubelet lists and has not refused, not the oldest, and
// fails rather than guess when the kubelet stops answering.
func TestAllocateServesThePodTheKubeletLists(t *testing.T) {
	older := testAllocation("older", "uid-older", testNode, container("main", gpuv1alpha1.ContainerApp, dev("GPU-a", 0, 1000, 10)))
	admitted := testAllocation("admitted", "uid-admitted", testNode, container("main", gpuv1alpha1.ContainerApp, dev("GPU-b", 1, 3000, 30)))
	admitted.CreationTimestamp.Time = testNow.Add(time.Second)
	// The kubelet refused it before allocating its devices, and lists it
	// still, as a kubelet that lists ended pods does.
	refused := testAllocation("refused", "uid-refused", testNode, container("main", gpuv1alpha1.ContainerApp, dev("GPU-a", 0, 2000, 20)))
	refused.CreationTimestamp.Time = testNow.Add(-time.Second)
	refusedPod := testPod("refused", "uid-refused")
	refusedPod.Status.Phase = corev1.PodFailed
	pods := []*corev1.Pod{testPod("older", "uid-older"), testPod("admitted", "uid-admitted"), refusedPod}
	h := newUnitHarness(t, pods, []*gpuv1alpha1.GPUAllocation{older, admitted, refused}, ResponseConfig{})
	kubelet := &kubeletPods{pods: []string{"admitted", "refused", "running-elsewhere"}}
	h.alloc.cfg.Kubelet = kubelet

	if got := h.alloc.Identify(h.ctx); got != gpuv1alpha1.PodIdentificationPodResources {
		t.Fatalf("Identify with the kubelet answering: %s, want PodResources", got)
	}
	pref, err := h.alloc.Preferred(h.ctx, &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
		AvailableDeviceIDs: []string{vdevice.ID("GPU-a", 0), vdevice.ID("GPU-b", 0)}, AllocationSize: 1,
	}}})
	if err != nil || len(pref.ContainerResponses) != 1 || len(pref.ContainerResponses[0].DeviceIDs) != 1 || pref.ContainerResponses[0].DeviceIDs[0] != vdevice.ID("GPU-b", 0) {
		t.Fatalf("Preferred: %v, %v; want GPU-b::0, the listed pod's GPU", pref, err)
	}
	resp, err := h.alloc.Allocate(h.ctx, request(1))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.ContainerResponses[0].Envs["NVIDIA_VISIBLE_DEVICES"]; got != "GPU-b" {
		t.Errorf("served GPUs %q, want GPU-b of the pod the kubelet lists", got)
	}
	if phase := h.stored(t, "admitted").Status.Phase; phase != gpuv1alpha1.AllocationAllocated {
		t.Errorf("listed pod's allocation is %q, want Allocated", phase)
	}
	if phase := h.stored(t, "older").Status.Phase; phase != "" {
		t.Errorf("unlisted pod's allocation is %q, want untouched", phase)
	}

	kubelet.err = errors.New("connection refused")
	writes := h.statusWrites()
	if _, err := h.alloc.Allocate(h.ctx, request(1)); err == nil {
		t.Fatal("Allocate served a pod while the kubelet could not say which it admits")
	}
	if h.statusWrites() != writes {
		t.Error("Allocate wrote an allocation while the kubelet could not say which pod it admits")
	}
}

// A kubelet that does not answer leaves the node at one allocation in
// flight: Identify says InFlight, and Allocate serves that one.
func TestIdentifyWithoutThePodResourcesAPI(t *testing.T) {
	only := testAllocation("only", "uid-only", testNode, container("main", gpuv1alpha1.ContainerApp, dev("GPU-a", 0, 1000, 10)))
	h := newUnitHarness(t, []*corev1.Pod{testPod("only", "uid-only")}, []*gpuv1alpha1.GPUAllocation{only}, ResponseConfig{})
	if got := h.alloc.Identify(h.ctx); got != gpuv1alpha1.PodIdentificationInFlight {
		t.Fatalf("Identify with no pod-resources socket: %s, want InFlight", got)
	}
	h.alloc.cfg.Kubelet = &kubeletPods{err: errors.New("no such file or directory")}
	ctx, cancel := context.WithTimeout(h.ctx, 50*time.Millisecond)
	defer cancel()
	if got := h.alloc.Identify(ctx); got != gpuv1alpha1.PodIdentificationInFlight {
		t.Fatalf("Identify with the kubelet not answering: %s, want InFlight", got)
	}
	noSocket := &kubeletPods{err: fmt.Errorf("the kubelet's pod-resources socket: %w", fs.ErrNotExist)}
	h.alloc.cfg.Kubelet = noSocket
	if got := h.alloc.Identify(h.ctx); got != gpuv1alpha1.PodIdentificationInFlight || noSocket.calls != 1 {
		t.Fatalf("Identify with no socket: %s after %d calls, want InFlight after 1: no socket is not waited for", got, noSocket.calls)
	}
	resp, err := h.alloc.Allocate(h.ctx, request(1))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.ContainerResponses[0].Envs["NVIDIA_VISIBLE_DEVICES"]; got != "GPU-a" {
		t.Errorf("served GPUs %q, want GPU-a of the node's one in-flight allocation", got)
	}
}
