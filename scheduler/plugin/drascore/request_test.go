package drascore

import (
	"errors"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// claims is a ClaimGetter over a fixed set of claims, by name.
type claims map[string]*resourceapi.ResourceClaim

func (c claims) Get(_, name string) (*resourceapi.ResourceClaim, error) {
	if claim, ok := c[name]; ok {
		return claim, nil
	}
	return nil, errors.New("not found")
}

// GetPendingAllocation finds no allocation in flight.
func (c claims) GetPendingAllocation(types.UID) *resourceapi.AllocationResult { return nil }

// claim is an unallocated claim of the given requests.
func claim(name string, requests ...resourceapi.DeviceRequest) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: requests}},
	}
}

// exactly is a request of count devices of class with the capacity
// requests (name, quantity pairs).
func exactly(name, class string, count int64, capacity ...string) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count, Capacity: capacityRequests(capacity...),
	}}
}

func capacityRequests(pairs ...string) *resourceapi.CapacityRequirements {
	if len(pairs) == 0 {
		return nil
	}
	c := &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{}}
	for i := 0; i < len(pairs); i += 2 {
		c.Requests[resourceapi.QualifiedName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return c
}

// podOf is a pod using the claims by name.
func podOf(names ...string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	for _, n := range names {
		pod.Spec.ResourceClaims = append(pod.Spec.ResourceClaims, v1.PodResourceClaim{Name: n, ResourceClaimName: ptr.To(n)})
	}
	return pod
}

func app(name string, count int32, memoryMiB int64, cores int32) gpurequest.ContainerRequest {
	return gpurequest.ContainerRequest{Name: name, Kind: gpuv1alpha1.ContainerApp, Count: count, MemoryMiB: memoryMiB, Cores: cores}
}

func TestClaimRequests(t *testing.T) {
	const class = gpuv1alpha1.DRADriverName
	allocated := claim("done", exactly("gpu", class, 1, "memory", "1Gi"))
	allocated.Status.Allocation = &resourceapi.AllocationResult{}
	tests := []struct {
		name   string
		claims claims
		pod    *v1.Pod
		want   [][]gpurequest.ContainerRequest
	}{
		{
			name:   "memory and cores per GPU, memory rounded up to whole MiB",
			claims: claims{"a": claim("a", exactly("gpu", class, 2, "memory", "1000Mi", "cores", "30"), exactly("small", class, 0, "memory", "1500000"))},
			pod:    podOf("a"),
			want:   [][]gpurequest.ContainerRequest{{app("a/gpu", 2, 1000, 30)}, {app("a/small", 1, 2, 0)}},
		},
		{
			name:   "no memory named takes the whole GPU",
			claims: claims{"a": claim("a", exactly("gpu", class, 1, "cores", "100"))},
			pod:    podOf("a"),
			want:   [][]gpurequest.ContainerRequest{{app("a/gpu", 1, 0, 100)}},
		},
		{
			name:   "capacities named with the driver's domain",
			claims: claims{"a": claim("a", exactly("gpu", class, 1, class+"/memory", "2Gi"))},
			pod:    podOf("a"),
			want:   [][]gpurequest.ContainerRequest{{app("a/gpu", 1, 2048, 0)}},
		},
		{
			name: "another class, all devices and allocated claims add nothing",
			claims: claims{
				"a":    claim("a", exactly("nic", "nic.example.com", 1), resourceapi.DeviceRequest{Name: "all", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeAll}}),
				"done": allocated,
			},
			pod: podOf("a", "done"),
		},
		{
			name: "firstAvailable gives its subrequests of Tessera's classes in order",
			claims: claims{"a": claim("a", resourceapi.DeviceRequest{Name: "gpu", FirstAvailable: []resourceapi.DeviceSubRequest{
				{Name: "a100", DeviceClassName: class, Count: 1, Capacity: capacityRequests("memory", "40Gi")},
				{Name: "other", DeviceClassName: "other.example.com", Count: 1},
				{Name: "l4", DeviceClassName: class, Count: 1, Capacity: capacityRequests("memory", "11Gi")},
			}})},
			pod:  podOf("a"),
			want: [][]gpurequest.ContainerRequest{{app("a/gpu/a100", 1, 40960, 0), app("a/gpu/l4", 1, 11264, 0)}},
		},
		{
			name:   "a template's claim is found through the pod's status",
			claims: claims{"p-gpu-x1": claim("p-gpu-x1", exactly("gpu", class, 1, "memory", "1Gi"))},
			pod: &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
				Spec:       v1.PodSpec{ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("t")}}},
				Status:     v1.PodStatus{ResourceClaimStatuses: []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr.To("p-gpu-x1")}}},
			},
			want: [][]gpurequest.ContainerRequest{{app("p-gpu-x1/gpu", 1, 1024, 0)}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := claimRequests(tc.pod, tc.claims, []string{class})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCandidates(t *testing.T) {
	a, b, c := app("a", 1, 1, 0), app("b", 1, 2, 0), app("c", 1, 3, 0)
	x := app("x", 1, 9, 0)
	got := candidates([][]gpurequest.ContainerRequest{{a, b, c}, {x}})
	want := [][]gpurequest.ContainerRequest{{a, x}, {b, x}, {c, x}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
