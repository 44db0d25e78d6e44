package plugin

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

func TestDRARequest(t *testing.T) {
	class := gpuv1alpha1.DRADriverName
	request := func(count int64, capacity map[resourceapi.QualifiedName]string) resourceapi.DeviceRequest {
		e := &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}
		if len(capacity) > 0 {
			e.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{}}
			for k, v := range capacity {
				e.Capacity.Requests[k] = resource.MustParse(v)
			}
		}
		return resourceapi.DeviceRequest{Name: "gpu", Exactly: e}
	}
	firstAvailable := func(subs ...resourceapi.DeviceRequest) resourceapi.DeviceRequest {
		r := resourceapi.DeviceRequest{Name: "gpu"}
		for i, s := range subs {
			r.FirstAvailable = append(r.FirstAvailable, resourceapi.DeviceSubRequest{
				Name: string(rune('a' + i)), DeviceClassName: class, AllocationMode: s.Exactly.AllocationMode, Count: s.Exactly.Count, Capacity: s.Exactly.Capacity,
			})
		}
		return r
	}
	distinct := resourceapi.DeviceConstraint{DistinctAttribute: ptr.To(resourceapi.FullyQualifiedName(class + "/" + string(gpuv1alpha1.DRAAttributeUUID)))}
	memory := func(q string) map[resourceapi.QualifiedName]string {
		return map[resourceapi.QualifiedName]string{gpuv1alpha1.DRACapacityMemory: q}
	}
	tests := []struct {
		name        string
		request     resourceapi.DeviceRequest
		constraints []resourceapi.DeviceConstraint
		allocated   bool
		// count, memoryMiB and cores are the gate's request; ok false
		// for none.
		count     int32
		memoryMiB int64
		cores     int32
		ok        bool
	}{
		{name: "memory asked", request: request(1, memory("20Gi")), count: 1, memoryMiB: 20480, ok: true},
		{name: "no memory named is a whole GPU", request: request(1, nil), count: 1, ok: true},
		{name: "cores asked", request: request(1, map[resourceapi.QualifiedName]string{gpuv1alpha1.DRACapacityMemory: "1Gi", gpuv1alpha1.DRACapacityCores: "30"}), count: 1, memoryMiB: 1024, cores: 30, ok: true},
		{name: "all cores ask for 99, not for the GPU alone", request: request(1, map[resourceapi.QualifiedName]string{gpuv1alpha1.DRACapacityMemory: "1Gi", gpuv1alpha1.DRACapacityCores: "100"}), count: 1, memoryMiB: 1024, cores: 99, ok: true},
		{name: "GPUs kept distinct count", request: request(2, memory("8Gi")), constraints: []resourceapi.DeviceConstraint{distinct}, count: 2, memoryMiB: 8192, ok: true},
		{name: "GPUs not kept distinct may be one", request: request(2, memory("8Gi")), count: 1, memoryMiB: 8192, ok: true},
		{name: "the least of the choices", request: firstAvailable(request(1, memory("70Gi")), request(1, memory("30Gi"))), count: 1, memoryMiB: 30720, ok: true},
		{name: "a whole GPU among parts asks for almost nothing", request: firstAvailable(request(1, memory("70Gi")), request(1, nil)), count: 1, memoryMiB: 1, ok: true},
		{name: "another class is not judged", request: func() resourceapi.DeviceRequest {
			r := request(1, memory("1Gi"))
			r.Exactly.DeviceClassName = "other"
			return r
		}()},
		{name: "an allocated claim is not judged", request: request(1, memory("1Gi")), allocated: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			claim := &resourceapi.ResourceClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"},
				Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{tc.request}, Constraints: tc.constraints}},
			}
			if tc.allocated {
				claim.Status.Allocation = &resourceapi.AllocationResult{}
			}
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
				Spec:       v1.PodSpec{ResourceClaims: []v1.PodResourceClaim{{Name: "gpus", ResourceClaimName: ptr.To("c")}}},
			}
			req, ok := draRequest(pod, claimList{claim}, []string{class})
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			c := req.Containers[0]
			if len(req.Containers) != 1 || c.Count != tc.count || c.MemoryMiB != tc.memoryMiB || c.Cores != tc.cores {
				t.Errorf("request %+v, want one container of %d GPUs with %d MiB and %d cores", req.Containers, tc.count, tc.memoryMiB, tc.cores)
			}
		})
	}
}
