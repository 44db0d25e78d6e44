package scheduler

import (
	"testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// dynamicA100 is an A100 80GB in MIG mode whose instances are made on
// demand, up to 7 at once.
func dynamicA100() gpuSpec {
	run := func(size int32, starts ...int32) []gpuv1alpha1.MIGPlacement {
		var out []gpuv1alpha1.MIGPlacement
		for _, s := range starts {
			out = append(out, gpuv1alpha1.MIGPlacement{Start: s, Size: size})
		}
		return out
	}
	return gpuSpec{model: "NVIDIA A100-SXM4-80GB", memoryMiB: 81920, shares: 7, geometry: &gpuv1alpha1.MIGGeometry{Profiles: []gpuv1alpha1.MIGProfile{
		{Name: "1g.10gb", ProfileID: 19, MemoryMiB: 9856, ComputePercent: 14, Placements: run(1, 0, 1, 2, 3, 4, 5, 6)},
		{Name: "2g.20gb", ProfileID: 14, MemoryMiB: 19968, ComputePercent: 29, Placements: run(2, 0, 2, 4)},
		{Name: "3g.40gb", ProfileID: 9, MemoryMiB: 40192, ComputePercent: 43, Placements: run(4, 0, 4)},
		{Name: "7g.80gb", ProfileID: 0, MemoryMiB: 80896, ComputePercent: 100, Placements: run(8, 0)},
	}}}
}

// TestDynamicMIGPlacement places pods in HAMi's MIG mode on GPUs whose
// instances are made on demand, the same way in both modes: each gets
// the smallest profile that holds its memory at the first free run of
// slices, recorded in its allocation; a pod that asks for shared GPUs
// or none in particular is refused such a GPU; and one that finds no
// room is told so, and placed when a pod ends.
func TestDynamicMIGPlacement(t *testing.T) {
	inBothModes(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		const group = "dynmig"
		e.addNode(ctx, t, "dynmig-1", group, 7, dynamicA100())
		hamiMIG := map[string]string{"nvidia.com/vgpu-mode": "mig"}
		for _, tc := range []struct {
			name    string
			memory  int64
			profile string
			start   int32
		}{
			{"small", 8000, "1g.10gb", 0},
			{"large", 30000, "3g.40gb", 4},
			{"medium", 15000, "2g.20gb", 2},
		} {
			e.createPod(ctx, t, gpuPod(tc.name, group, hamiMIG, ctr{name: "cuda", count: 1, memory: tc.memory}))
			_, alloc := e.waitBound(ctx, t, tc.name)
			d := alloc.Spec.Containers[0].Devices[0]
			if d.MIG == nil || d.MIG.Profile != tc.profile || d.MIG.Placement.Start != tc.start {
				t.Errorf("pod %s got %+v (MIG %+v), want a %s instance at slice %d", tc.name, d, d.MIG, tc.profile, tc.start)
			}
		}
		e.createPod(ctx, t, gpuPod("shared", group, map[string]string{"nvidia.com/vgpu-mode": "hami-core"}, ctr{name: "cuda", count: 1, memory: 1000}))
		e.waitFailedScheduling(ctx, t, "shared", "1 type mismatch")
		e.createPod(ctx, t, gpuPod("plain", group, nil, ctr{name: "cuda", count: 1, memory: 1000}))
		e.waitFailedScheduling(ctx, t, "plain", "in MIG mode, and the pod does not ask for MIG")
		e.createPod(ctx, t, gpuPod("no-room", group, hamiMIG, ctr{name: "cuda", count: 1, memory: 30000}))
		e.waitFailedScheduling(ctx, t, "no-room", "no room for the MIG instance")

		e.deletePod(ctx, t, "large")
		_, alloc := e.waitBound(ctx, t, "no-room")
		if m := alloc.Spec.Containers[0].Devices[0].MIG; m == nil || m.Profile != "3g.40gb" || m.Placement.Start != 4 {
			t.Errorf("the pod that waited got %+v, want the 3g.40gb instance at slice 4", m)
		}
	})
}
