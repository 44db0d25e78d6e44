package scheduler

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// testShapes places pods of many shapes and checks the node and GPUs each
// one gets.
func testShapes(ctx context.Context, t *testing.T, e *env) {
	const group = "shapes"
	e.addNode(ctx, t, "shapes-a100", group, 10, a100(0), a100(0), a100(1), a100(1))
	e.addNode(ctx, t, "shapes-t4", group, 10, t4(), t4())

	type check func(t *testing.T, pod *corev1.Pod, a *gpuv1alpha1.GPUAllocation)
	tests := []struct {
		name        string
		annotations map[string]string
		containers  []ctr
		node        string
		check       check
	}{
		{
			name:        "count alone takes a whole GPU's memory",
			annotations: map[string]string{"tessera.dev/gpu-type": "T4"},
			containers:  []ctr{{name: "main", count: 1}},
			node:        "shapes-t4",
			check:       devices(1, 15360, 0),
		},
		{
			name:       "memory beyond a T4 goes to an A100",
			containers: []ctr{{name: "main", count: 1, memory: 20000}},
			node:       "shapes-a100",
			check:      devices(1, 20000, 0),
		},
		{
			name:        "memory percentage is of the GPU's memory",
			annotations: map[string]string{"tessera.dev/gpu-type": "t4"},
			containers:  []ctr{{name: "main", count: 1, pct: 50}},
			node:        "shapes-t4",
			check:       devices(1, 7680, 0),
		},
		{
			name:        "HAMi type exclusion",
			annotations: map[string]string{"nvidia.com/nouse-gputype": "A100"},
			containers:  []ctr{{name: "main", count: 1, memory: 1000}},
			node:        "shapes-t4",
			check:       devices(1, 1000, 0),
		},
		{
			name:        "UUID pin",
			annotations: map[string]string{"tessera.dev/gpu-uuid": "GPU-shapes-a100-2"},
			containers:  []ctr{{name: "main", count: 1, memory: 1000}},
			node:        "shapes-a100",
			check: func(t *testing.T, _ *corev1.Pod, a *gpuv1alpha1.GPUAllocation) {
				if got := a.Spec.Containers[0].Devices[0].UUID; got != "GPU-shapes-a100-2" {
					t.Errorf("got GPU %s, want GPU-shapes-a100-2", got)
				}
			},
		},
		{
			name:        "NUMA binding keeps a container's GPUs on one NUMA node",
			annotations: map[string]string{"tessera.dev/numa-bind": "true", "tessera.dev/gpu-type": "A100"},
			containers:  []ctr{{name: "main", count: 2, memory: 1000}},
			node:        "shapes-a100",
			check: func(t *testing.T, pod *corev1.Pod, a *gpuv1alpha1.GPUAllocation) {
				devices(2, 1000, 0)(t, pod, a)
				d := a.Spec.Containers[0].Devices
				if len(d) == 2 && d[0].Index/2 != d[1].Index/2 {
					t.Errorf("GPUs %d and %d are on different NUMA nodes", d[0].Index, d[1].Index)
				}
			},
		},
		{
			name:        "100 cores is exclusive",
			annotations: map[string]string{"tessera.dev/gpu-type": "T4"},
			containers:  []ctr{{name: "main", count: 1, memory: 1000, core: 100}},
			node:        "shapes-t4",
			check:       devices(1, 1000, 100),
		},
		{
			name:       "four GPUs in one container",
			containers: []ctr{{name: "main", count: 4, memory: 1000, core: 20}},
			node:       "shapes-a100",
			check:      devices(4, 1000, 20),
		},
		{
			name:        "init, sidecar and app containers in the kubelet's order",
			annotations: map[string]string{"tessera.dev/gpu-type": "A100"},
			containers: []ctr{
				{name: "app", count: 1, memory: 3000},
				{name: "prepare", init: true, count: 1, memory: 5000},
				{name: "proxy", sidecar: true, count: 1, memory: 2000},
			},
			node: "shapes-a100",
			check: func(t *testing.T, _ *corev1.Pod, a *gpuv1alpha1.GPUAllocation) {
				want := []struct {
					name string
					kind gpuv1alpha1.ContainerKind
					mem  int64
				}{{"prepare", gpuv1alpha1.ContainerInit, 5000}, {"proxy", gpuv1alpha1.ContainerSidecar, 2000}, {"app", gpuv1alpha1.ContainerApp, 3000}}
				if len(a.Spec.Containers) != len(want) {
					t.Fatalf("got %d containers, want %d", len(a.Spec.Containers), len(want))
				}
				for i, w := range want {
					c := a.Spec.Containers[i]
					if c.Name != w.name || c.Kind != w.kind || c.Devices[0].MemoryMiB != w.mem {
						t.Errorf("container %d = %s %s %d MiB, want %s %s %d MiB", i, c.Name, c.Kind, c.Devices[0].MemoryMiB, w.name, w.kind, w.mem)
					}
				}
			},
		},
		{
			name: "two GPU containers in one pod",
			containers: []ctr{
				{name: "a", count: 2, memory: 10000},
				{name: "b", count: 2, memory: 10000},
			},
			node: "shapes-a100",
			check: func(t *testing.T, _ *corev1.Pod, a *gpuv1alpha1.GPUAllocation) {
				if len(a.Spec.Containers) != 2 || len(a.Spec.Containers[0].Devices) != 2 || len(a.Spec.Containers[1].Devices) != 2 {
					t.Fatalf("containers = %+v, want two with two GPUs each", a.Spec.Containers)
				}
				if a.Spec.MemoryMiB != 40000 {
					t.Errorf("allocation memory = %d MiB, want 40000", a.Spec.MemoryMiB)
				}
			},
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := "shape-" + itoa(i)
			e.createPod(ctx, t, gpuPod(name, group, tc.annotations, tc.containers...))
			pod, alloc := e.waitBound(ctx, t, name)
			if pod.Spec.NodeName != tc.node {
				t.Errorf("pod went to %s, want %s", pod.Spec.NodeName, tc.node)
			}
			tc.check(t, pod, alloc)
			e.deletePod(ctx, t, name)
		})
	}
}

// devices checks a one-container allocation: n distinct GPUs, each with the
// given memory and cores.
func devices(n int, memoryMiB int64, cores int32) func(t *testing.T, _ *corev1.Pod, a *gpuv1alpha1.GPUAllocation) {
	return func(t *testing.T, _ *corev1.Pod, a *gpuv1alpha1.GPUAllocation) {
		t.Helper()
		if len(a.Spec.Containers) != 1 {
			t.Fatalf("got %d containers, want 1", len(a.Spec.Containers))
		}
		got := a.Spec.Containers[0].Devices
		seen := map[string]bool{}
		for _, d := range got {
			seen[d.UUID] = true
			if d.MemoryMiB != memoryMiB || d.Cores != cores {
				t.Errorf("GPU %s: %d MiB, %d cores; want %d MiB, %d cores", d.UUID, d.MemoryMiB, d.Cores, memoryMiB, cores)
			}
		}
		if len(got) != n || len(seen) != n {
			t.Errorf("got GPUs %+v, want %d distinct", got, n)
		}
	}
}
