package framework

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// DeviceUse is, for each device of the ResourceSlices by pool/device,
// what its slice offers of each capacity, and what the allocated claims
// consume of each, as kube-scheduler reads them; used also names devices
// no slice has.
func DeviceUse(slices []resourceapi.ResourceSlice, claims []resourceapi.ResourceClaim) (capacity, used map[string]map[resourceapi.QualifiedName]resource.Quantity) {
	capacity = map[string]map[resourceapi.QualifiedName]resource.Quantity{}
	for _, s := range slices {
		for _, d := range s.Spec.Devices {
			key := s.Spec.Pool.Name + "/" + d.Name
			capacity[key] = map[resourceapi.QualifiedName]resource.Quantity{}
			for name, c := range d.Capacity {
				capacity[key][name] = c.Value
			}
		}
	}
	used = map[string]map[resourceapi.QualifiedName]resource.Quantity{}
	for _, claim := range claims {
		if claim.Status.Allocation == nil {
			continue
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			key := r.Pool + "/" + r.Device
			if used[key] == nil {
				used[key] = map[resourceapi.QualifiedName]resource.Quantity{}
			}
			for name, q := range r.ConsumedCapacity {
				sum := used[key][name]
				sum.Add(q)
				used[key][name] = sum
			}
		}
	}
	return capacity, used
}

// OverCapacity sums the consumed capacity of the allocated claims per
// device and names every device that consumes more of a capacity than its
// ResourceSlice offers, and every allocated device no slice has: the DRA
// form of the GPU accounting invariant, read as kube-scheduler reads it.
func OverCapacity(slices []resourceapi.ResourceSlice, claims []resourceapi.ResourceClaim) []string {
	capacity, used := DeviceUse(slices, claims)
	var out []string
	for key, names := range used {
		have, ok := capacity[key]
		if !ok {
			out = append(out, fmt.Sprintf("claims are allocated device %s, which no ResourceSlice has", key))
			continue
		}
		for name, q := range names {
			if c, ok := have[name]; ok && q.Cmp(c) > 0 {
				out = append(out, fmt.Sprintf("%s %s: %s of %s", key, name, &q, &c))
			}
		}
	}
	return out
}
