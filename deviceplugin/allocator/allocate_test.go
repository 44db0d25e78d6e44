package allocator

import (
	"reflect"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/hamicore"
)

func request(counts ...int) *pluginapi.AllocateRequest {
	req := &pluginapi.AllocateRequest{}
	for i, n := range counts {
		var ids []string
		for j := range n {
			ids = append(ids, "GPU-a::"+string(rune('0'+i))+string(rune('0'+j)))
		}
		req.ContainerRequests = append(req.ContainerRequests, &pluginapi.ContainerAllocateRequest{DevicesIds: ids})
	}
	return req
}

func TestAllocateServes(t *testing.T) {
	lib := ResponseConfig{Library: hamicore.Library{HostPath: "/opt/hami/libvgpu.so", ContainerPath: "/usr/local/vgpu/libvgpu.so", PreloadHostPath: "/opt/hami/ld.so.preload"}}
	twoContainers := testAllocation("p", "uid-p", testNode,
		container("init", gpuv1alpha1.ContainerInit, dev("GPU-a", 0, 2000, 30)),
		container("main", gpuv1alpha1.ContainerApp, dev("GPU-b", 1, 4000, 50), dev("GPU-a", 0, 4000, 50)))
	tests := []struct {
		name       string
		alloc      *gpuv1alpha1.GPUAllocation
		resp       ResponseConfig
		req        *pluginapi.AllocateRequest
		want       []*pluginapi.ContainerAllocateResponse
		wantServed []string
		wantPhase  gpuv1alpha1.AllocationPhase
	}{
		{
			name:  "single container gets its GPU and limits, and the allocation is Allocated",
			alloc: testAllocation("p", "uid-p", testNode, container("main", gpuv1alpha1.ContainerApp, dev("GPU-b", 1, 4000, 25))),
			req:   request(1),
			want: []*pluginapi.ContainerAllocateResponse{{Envs: map[string]string{
				"NVIDIA_VISIBLE_DEVICES":          "GPU-b",
				"CUDA_DEVICE_MEMORY_LIMIT_0":      "4000m",
				"CUDA_DEVICE_SM_LIMIT":            "25",
				"CUDA_DEVICE_MEMORY_SHARED_CACHE": "/tmp/tessera-vgpu-uid-p-main.cache",
			}}},
			wantServed: []string{"main"},
			wantPhase:  gpuv1alpha1.AllocationAllocated,
		},
		{
			name:  "an exclusive container on a core-scaled GPU is limited to 100% of the GPU",
			alloc: testAllocation("p", "uid-p", testNode, container("main", gpuv1alpha1.ContainerApp, dev("GPU-b", 1, 4000, 200))),
			req:   request(1),
			want: []*pluginapi.ContainerAllocateResponse{{Envs: map[string]string{
				"NVIDIA_VISIBLE_DEVICES":          "GPU-b",
				"CUDA_DEVICE_MEMORY_LIMIT_0":      "4000m",
				"CUDA_DEVICE_SM_LIMIT":            "100",
				"CUDA_DEVICE_MEMORY_SHARED_CACHE": "/tmp/tessera-vgpu-uid-p-main.cache",
			}}},
			wantServed: []string{"main"},
			wantPhase:  gpuv1alpha1.AllocationAllocated,
		},
		{
			name:  "library configured adds the library and ld.so.preload mounts",
			alloc: testAllocation("p", "uid-p", testNode, container("main", gpuv1alpha1.ContainerApp, dev("GPU-b", 1, 4000, 0))),
			resp:  lib,
			req:   request(1),
			want: []*pluginapi.ContainerAllocateResponse{{
				Envs: map[string]string{
					"NVIDIA_VISIBLE_DEVICES":          "GPU-b",
					"CUDA_DEVICE_MEMORY_LIMIT_0":      "4000m",
					"CUDA_DEVICE_SM_LIMIT":            "0",
					"CUDA_DEVICE_MEMORY_SHARED_CACHE": "/tmp/tessera-vgpu-uid-p-main.cache",
				},
				Mounts: []*pluginapi.Mount{
					{ContainerPath: "/usr/local/vgpu/libvgpu.so", HostPath: "/opt/hami/libvgpu.so", ReadOnly: true},
					{ContainerPath: "/etc/ld.so.preload", HostPath: "/opt/hami/ld.so.preload", ReadOnly: true},
				},
			}},
			wantServed: []string{"main"},
			wantPhase:  gpuv1alpha1.AllocationAllocated,
		},
		{
			name:  "memory scaled above the GPU's turns HAMi-core's over-subscription on",
			alloc: testAllocation("p", "uid-p", testNode, container("main", gpuv1alpha1.ContainerApp, dev("GPU-b", 1, 60000, 0))),
			resp:  ResponseConfig{MemoryOversubscribed: true},
			req:   request(1),
			want: []*pluginapi.ContainerAllocateResponse{{Envs: map[string]string{
				"NVIDIA_VISIBLE_DEVICES":          "GPU-b",
				"CUDA_DEVICE_MEMORY_LIMIT_0":      "60000m",
				"CUDA_DEVICE_SM_LIMIT":            "0",
				"CUDA_DEVICE_MEMORY_SHARED_CACHE": "/tmp/tessera-vgpu-uid-p-main.cache",
				"CUDA_OVERSUBSCRIBE":              "true",
			}}},
			wantServed: []string{"main"},
			wantPhase:  gpuv1alpha1.AllocationAllocated,
		},
		{
			name:  "init container is served first and the allocation stays Pending",
			alloc: twoContainers,
			req:   request(1),
			want: []*pluginapi.ContainerAllocateResponse{{Envs: map[string]string{
				"NVIDIA_VISIBLE_DEVICES":          "GPU-a",
				"CUDA_DEVICE_MEMORY_LIMIT_0":      "2000m",
				"CUDA_DEVICE_SM_LIMIT":            "30",
				"CUDA_DEVICE_MEMORY_SHARED_CACHE": "/tmp/tessera-vgpu-uid-p-init.cache",
			}}},
			wantServed: []string{"init"},
			wantPhase:  gpuv1alpha1.AllocationPending,
		},
		{
			name: "already served containers are skipped",
			alloc: func() *gpuv1alpha1.GPUAllocation {
				a := twoContainers.DeepCopy()
				a.Status = gpuv1alpha1.GPUAllocationStatus{Phase: gpuv1alpha1.AllocationPending, ServedContainers: []string{"init"}}
				return a
			}(),
			req: request(2),
			want: []*pluginapi.ContainerAllocateResponse{{Envs: map[string]string{
				"NVIDIA_VISIBLE_DEVICES":          "GPU-b,GPU-a",
				"CUDA_DEVICE_MEMORY_LIMIT_0":      "4000m",
				"CUDA_DEVICE_MEMORY_LIMIT_1":      "4000m",
				"CUDA_DEVICE_SM_LIMIT":            "50",
				"CUDA_DEVICE_MEMORY_SHARED_CACHE": "/tmp/tessera-vgpu-uid-p-main.cache",
			}}},
			wantServed: []string{"init", "main"},
			wantPhase:  gpuv1alpha1.AllocationAllocated,
		},
		{
			name:       "several containers in one request are recorded in one write",
			alloc:      twoContainers,
			req:        request(1, 2),
			wantServed: []string{"init", "main"},
			wantPhase:  gpuv1alpha1.AllocationAllocated,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newUnitHarness(t, []*corev1.Pod{testPod("p", "uid-p")}, []*gpuv1alpha1.GPUAllocation{tt.alloc}, tt.resp)
			resp, err := h.alloc.Allocate(h.ctx, tt.req)
			if err != nil {
				t.Fatalf("Allocate: %v", err)
			}
			if len(resp.ContainerResponses) != len(tt.req.ContainerRequests) {
				t.Fatalf("%d container responses, want %d", len(resp.ContainerResponses), len(tt.req.ContainerRequests))
			}
			if tt.want != nil && !reflect.DeepEqual(resp.ContainerResponses, tt.want) {
				t.Errorf("responses\n%v\nwant\n%v", resp.ContainerResponses, tt.want)
			}
			got := h.stored(t, "p")
			if !reflect.DeepEqual(got.Status.ServedContainers, tt.wantServed) || got.Status.Phase != tt.wantPhase {
				t.Errorf("status served=%v phase=%s, want served=%v phase=%s", got.Status.ServedContainers, got.Status.Phase, tt.wantServed, tt.wantPhase)
			}
			wantTime := tt.wantPhase == gpuv1alpha1.AllocationAllocated
			if (got.Status.AllocatedTime != nil) != wantTime || (wantTime && !got.Status.AllocatedTime.Time.Equal(testNow)) {
				t.Errorf("allocatedTime %v, want set=%v at %v", got.Status.AllocatedTime, wantTime, testNow)
			}
			if n := h.statusWrites(); n != 1 {
				t.Errorf("%d status writes, want 1", n)
			}
		})
	}
}

func TestAllocateRefuses(t *testing.T) {
	oneGPU := func(uuid string) *gpuv1alpha1.GPUAllocation {
		return testAllocation("p", "uid-p", testNode, container("main", gpuv1alpha1.ContainerApp, dev(uuid, 0, 1000, 0)))
	}
	withStatus := func(a *gpuv1alpha1.GPUAllocation, s gpuv1alpha1.GPUAllocationStatus) *gpuv1alpha1.GPUAllocation {
		a.Status = s
		return a
	}
	beingDeleted := testPod("p", "uid-p")
	beingDeleted.DeletionTimestamp = &metav1.Time{Time: testNow}
	tests := []struct {
		name       string
		pods       []*corev1.Pod
		allocs     []*gpuv1alpha1.GPUAllocation
		req        *pluginapi.AllocateRequest
		code       codes.Code
		message    []string
		wantFailed bool // the allocation is marked Failed with the message
	}{
		{
			name: "no allocation at all", pods: []*corev1.Pod{testPod("p", "uid-p")},
			req: request(1), code: codes.FailedPrecondition, message: []string{"no pending GPUAllocation for node node-1"},
		},
		{
			name: "allocation for another node", pods: []*corev1.Pod{testPod("p", "uid-p")},
			allocs: []*gpuv1alpha1.GPUAllocation{testAllocation("p", "uid-p", "node-2", container("main", gpuv1alpha1.ContainerApp, dev("GPU-a", 0, 1, 0)))},
			req:    request(1), code: codes.FailedPrecondition, message: []string{"no pending GPUAllocation"},
		},
		{
			name: "allocation already Allocated", pods: []*corev1.Pod{testPod("p", "uid-p")},
			allocs: []*gpuv1alpha1.GPUAllocation{withStatus(oneGPU("GPU-a"), gpuv1alpha1.GPUAllocationStatus{Phase: gpuv1alpha1.AllocationAllocated, ServedContainers: []string{"main"}})},
			req:    request(1), code: codes.FailedPrecondition, message: []string{"no pending GPUAllocation"},
		},
		{
			name: "allocation already Failed", pods: []*corev1.Pod{testPod("p", "uid-p")},
			allocs: []*gpuv1alpha1.GPUAllocation{withStatus(oneGPU("GPU-a"), gpuv1alpha1.GPUAllocationStatus{Phase: gpuv1alpha1.AllocationFailed})},
			req:    request(1), code: codes.FailedPrecondition, message: []string{"no pending GPUAllocation"},
		},
		{
			name: "device count mismatch", pods: []*corev1.Pod{testPod("p", "uid-p")},
			allocs: []*gpuv1alpha1.GPUAllocation{oneGPU("GPU-a")},
			req:    request(2), code: codes.InvalidArgument, wantFailed: true,
			message: []string{`the kubelet asked for 2 GPUs for container "main" of pod ns/p, but the scheduler placed 1`},
		},
		{
			name: "more containers than placed", pods: []*corev1.Pod{testPod("p", "uid-p")},
			allocs: []*gpuv1alpha1.GPUAllocation{oneGPU("GPU-a")},
			req:    request(1, 1), code: codes.InvalidArgument, wantFailed: true,
			message: []string{"asked for 2 more GPU containers of pod ns/p, but the scheduler placed only 1 more"},
		},
		{
			name:   "pod deleted in between",
			allocs: []*gpuv1alpha1.GPUAllocation{oneGPU("GPU-a")},
			req:    request(1), code: codes.NotFound, wantFailed: true,
			message: []string{"pod ns/p was deleted before its GPUs were allocated"},
		},
		{
			name: "pod replaced by one of the same name", pods: []*corev1.Pod{testPod("p", "uid-other")},
			allocs: []*gpuv1alpha1.GPUAllocation{oneGPU("GPU-a")},
			req:    request(1), code: codes.NotFound, wantFailed: true,
			message: []string{"pod ns/p (UID uid-p) was deleted", "UID uid-other"},
		},
		{
			name: "a MIG instance made on demand on a node that makes none", pods: []*corev1.Pod{testPod("p", "uid-p")},
			allocs: []*gpuv1alpha1.GPUAllocation{testAllocation("p", "uid-p", testNode, container("main", gpuv1alpha1.ContainerApp, gpuv1alpha1.DeviceAllocation{
				UUID: "GPU-a", MemoryMiB: 9856, Cores: 14, MIG: &gpuv1alpha1.MIGAllocation{Profile: "1g.10gb", ProfileID: 19, Placement: gpuv1alpha1.MIGPlacement{Size: 1}}}))},
			req: request(1), code: codes.FailedPrecondition, wantFailed: true,
			message: []string{`container "main" of pod ns/p was given a MIG instance made on demand, but node node-1 makes none`},
		},
		{
			name: "pod being deleted", pods: []*corev1.Pod{beingDeleted},
			allocs: []*gpuv1alpha1.GPUAllocation{oneGPU("GPU-a")},
			req:    request(1), code: codes.NotFound, wantFailed: true,
			message: []string{"pod ns/p is being deleted"},
		},
		{
			name: "GPU not on the node", pods: []*corev1.Pod{testPod("p", "uid-p")},
			allocs: []*gpuv1alpha1.GPUAllocation{oneGPU("GPU-zz")},
			req:    request(1), code: codes.FailedPrecondition, wantFailed: true,
			message: []string{`GPU GPU-zz placed for container "main" of pod ns/p is not on node node-1`},
		},
		{
			name: "GPU unhealthy", pods: []*corev1.Pod{testPod("p", "uid-p")},
			allocs: []*gpuv1alpha1.GPUAllocation{oneGPU("GPU-c")},
			req:    request(1), code: codes.FailedPrecondition, wantFailed: true,
			message: []string{"GPU GPU-c placed for container \"main\" of pod ns/p is unhealthy: XID 79 critical error"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newUnitHarness(t, tt.pods, tt.allocs, ResponseConfig{})
			resp, err := h.alloc.Allocate(h.ctx, tt.req)
			if err == nil {
				t.Fatalf("Allocate succeeded with %v, want an error", resp)
			}
			st, _ := status.FromError(err)
			if st.Code() != tt.code {
				t.Errorf("code %s, want %s (%v)", st.Code(), tt.code, err)
			}
			for _, m := range tt.message {
				if !strings.Contains(st.Message(), m) {
					t.Errorf("message %q does not contain %q", st.Message(), m)
				}
			}
			for _, a := range tt.allocs {
				got := h.stored(t, a.Name)
				if !tt.wantFailed {
					if !reflect.DeepEqual(got.Status, a.Status) {
						t.Errorf("status changed to %+v, want it untouched", got.Status)
					}
					continue
				}
				if got.Status.Phase != gpuv1alpha1.AllocationFailed || got.Status.Message != st.Message() ||
					got.Status.AllocatedTime == nil || len(got.Status.ServedContainers) != 0 {
					t.Errorf("status %+v, want Failed with the message, a time and no container served", got.Status)
				}
			}
			if !tt.wantFailed && h.statusWrites() != 0 {
				t.Errorf("%d status writes, want none", h.statusWrites())
			}
		})
	}
}
