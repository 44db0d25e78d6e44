package allocator

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

func TestChoose(t *testing.T) {
	available := []string{"GPU-b::1", "GPU-a::0", "GPU-b::0", "GPU-a::10", "GPU-a::2", "GPU-c::0"}
	tests := []struct {
		name        string
		mustInclude []string
		size        int
		want        []string
		wantIDs     []string
	}{
		{name: "one wanted GPU gets its lowest device", size: 1, want: []string{"GPU-b"}, wantIDs: []string{"GPU-b::0"}},
		{name: "two wanted GPUs get one device each", size: 2, want: []string{"GPU-c", "GPU-a"}, wantIDs: []string{"GPU-c::0", "GPU-a::0"}},
		{name: "must-include devices come first and count as covering", size: 2, mustInclude: []string{"GPU-a::2"}, want: []string{"GPU-a", "GPU-b"}, wantIDs: []string{"GPU-a::2", "GPU-b::0"}},
		{name: "nothing wanted takes the lowest available", size: 2, wantIDs: []string{"GPU-a::0", "GPU-a::2"}},
		{name: "a wanted GPU with no free device is filled from the rest", size: 1, want: []string{"GPU-zz"}, wantIDs: []string{"GPU-a::0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := choose(available, tt.mustInclude, tt.size, tt.want)
			if !slices.Equal(got, tt.wantIDs) {
				t.Errorf("choose = %v, want %v", got, tt.wantIDs)
			}
		})
	}
}

func TestPreferredFollowsTheNextUnservedContainers(t *testing.T) {
	a := testAllocation("p", "uid-p", testNode,
		container("init", gpuv1alpha1.ContainerInit, dev("GPU-b", 1, 1000, 0)),
		container("main", gpuv1alpha1.ContainerApp, dev("GPU-b", 1, 1000, 0), dev("GPU-a", 0, 1000, 0)))
	a.Status.ServedContainers = []string{"init"}
	h := newUnitHarness(t, []*corev1.Pod{testPod("p", "uid-p")}, []*gpuv1alpha1.GPUAllocation{a}, ResponseConfig{})
	resp, err := h.alloc.Preferred(h.ctx, &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
		AvailableDeviceIDs: []string{"GPU-a::0", "GPU-a::1", "GPU-b::0", "GPU-b::1"},
		AllocationSize:     2,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resp.ContainerResponses[0].DeviceIDs, []string{"GPU-b::0", "GPU-a::0"}; !slices.Equal(got, want) {
		t.Errorf("preferred %v, want %v", got, want)
	}
	if h.statusWrites() != 0 {
		t.Error("GetPreferredAllocation wrote the allocation")
	}
}

func TestPreferredWithoutAllocationStillAnswers(t *testing.T) {
	h := newUnitHarness(t, nil, nil, ResponseConfig{})
	resp, err := h.alloc.Preferred(h.ctx, &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
		AvailableDeviceIDs: []string{"GPU-b::0", "GPU-a::1"}, AllocationSize: 1,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.ContainerResponses[0].DeviceIDs; !slices.Equal(got, []string{"GPU-a::1"}) {
		t.Errorf("preferred %v, want the lowest available", got)
	}
}
