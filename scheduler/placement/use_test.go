package placement

import (
	"math/rand/v2"
	"testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

func t4(index int32) Device {
	return with(gpu(index), model("Tesla T4"), func(d *Device) { d.MemoryMiB = 15360 })
}

// slice is one container's allocation on one GPU each.
func slice(kind gpuv1alpha1.ContainerKind, memoryMiB int64, cores int32, uuids ...string) gpuv1alpha1.ContainerAllocation {
	c := gpuv1alpha1.ContainerAllocation{Name: "c", Kind: kind}
	for _, u := range uuids {
		c.Devices = append(c.Devices, gpuv1alpha1.DeviceAllocation{UUID: u, MemoryMiB: memoryMiB, Cores: cores})
	}
	return c
}

func TestUseOf(t *testing.T) {
	scaled := with(gpu(2), func(d *Device) { d.Cores = 200 })
	mig := with(gpu(3), func(d *Device) { d.MIGProfile = "1g.10gb"; d.MemoryMiB = 9728 })
	n := node(gpu(0), gpu(1), scaled, mig)
	app, init, sidecar := gpuv1alpha1.ContainerApp, gpuv1alpha1.ContainerInit, gpuv1alpha1.ContainerSidecar
	tests := []struct {
		name       string
		containers []gpuv1alpha1.ContainerAllocation
		node       *Node
		want       Use
	}{
		{"a slice counts its memory and cores on each GPU",
			[]gpuv1alpha1.ContainerAllocation{slice(app, 10000, 30, "GPU-0", "GPU-1")}, n,
			Use{MemoryMiB: 20000, Cores: 60, GPUs: 2}},
		{"a memory slice with no cores counts none",
			[]gpuv1alpha1.ContainerAllocation{slice(app, 10000, 0, "GPU-0")}, n,
			Use{MemoryMiB: 10000, GPUs: 1}},
		{"a whole GPU counts its memory and 100 cores",
			[]gpuv1alpha1.ContainerAllocation{slice(app, 81920, 0, "GPU-0")}, n,
			Use{MemoryMiB: 81920, Cores: 100, GPUs: 1}},
		{"exclusive use of a GPU with scaled cores counts 100",
			[]gpuv1alpha1.ContainerAllocation{slice(app, 1000, 200, "GPU-2")}, n,
			Use{MemoryMiB: 1000, Cores: 100, GPUs: 1}},
		{"a MIG instance counts its memory and 100 cores",
			[]gpuv1alpha1.ContainerAllocation{slice(app, 9728, 100, "GPU-3")}, n,
			Use{MemoryMiB: 9728, Cores: 100, GPUs: 1}},
		{"a GPU the node does not have counts its cores as written",
			[]gpuv1alpha1.ContainerAllocation{slice(app, 81920, 0, "GPU-9"), slice(app, 1000, 100, "GPU-8")}, n,
			Use{MemoryMiB: 82920, Cores: 100, GPUs: 2}},
		{"no node counts cores as written",
			[]gpuv1alpha1.ContainerAllocation{slice(app, 5000, 40, "GPU-0")}, nil,
			Use{MemoryMiB: 5000, Cores: 40, GPUs: 1}},
		{"an init container larger than the apps counts alone",
			[]gpuv1alpha1.ContainerAllocation{slice(init, 30000, 50, "GPU-0", "GPU-1"), slice(app, 10000, 10, "GPU-0")}, n,
			Use{MemoryMiB: 60000, Cores: 100, GPUs: 2}},
		{"init containers run one at a time, each resource on its own",
			[]gpuv1alpha1.ContainerAllocation{slice(init, 30000, 0, "GPU-0"), slice(init, 1000, 90, "GPU-1"), slice(app, 20000, 20, "GPU-0")}, n,
			Use{MemoryMiB: 30000, Cores: 90, GPUs: 1}},
		{"a sidecar runs beside later init containers and the apps",
			[]gpuv1alpha1.ContainerAllocation{slice(sidecar, 5000, 10, "GPU-0"), slice(init, 30000, 20, "GPU-1"), slice(app, 1000, 10, "GPU-1")}, n,
			Use{MemoryMiB: 35000, Cores: 30, GPUs: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := UseOf(tc.containers, tc.node); got != tc.want {
				t.Errorf("UseOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestFitterUseIsPerGPU pins that a percentage of memory or a whole GPU
// takes what the GPU it gets has: a T4's share is smaller than an A100's.
func TestFitterUseIsPerGPU(t *testing.T) {
	half := &Request{Containers: []gpurequest.ContainerRequest{{Name: "c", Kind: gpuv1alpha1.ContainerApp, Count: 1, MemoryPercent: 50}}}
	whole := request(app("c", 2, 0, 0))
	tests := []struct {
		name string
		node *Node
		req  *Request
		want Use
		ok   bool
	}{
		{"half of a T4", node(t4(0)), half, Use{MemoryMiB: 7680, GPUs: 1}, true},
		{"half of an A100", node(gpu(0)), half, Use{MemoryMiB: 40960, GPUs: 1}, true},
		{"two whole T4s", node(t4(0), t4(1)), whole, Use{MemoryMiB: 30720, Cores: 200, GPUs: 2}, true},
		{"no room", node(with(t4(0), used(10000, 0, 1))), half, Use{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ft Fitter
			got, ok := ft.Use(tc.node, tc.req)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Use = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestUseProperties checks, on random requests and nodes, that Fitter.Use
// counts what UseOf counts of Fit's assignment, and that LeastUse is never
// more than either, resource by resource.
func TestUseProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 1))
	kinds := []gpuv1alpha1.ContainerKind{gpuv1alpha1.ContainerApp, gpuv1alpha1.ContainerInit, gpuv1alpha1.ContainerSidecar}
	var ft Fitter
	for i := range 2000 {
		var devices []Device
		for g := range rng.IntN(6) + 1 {
			d := gpu(int32(g))
			if rng.IntN(2) == 0 {
				d = t4(int32(g))
			}
			if rng.IntN(5) == 0 {
				d.Cores = 200
			}
			devices = append(devices, with(d, used(int64(rng.IntN(4))*2000, int32(rng.IntN(3))*20, int32(rng.IntN(2)))))
		}
		n := node(devices...)
		var containers []gpurequest.ContainerRequest
		for range rng.IntN(3) + 1 {
			c := gpurequest.ContainerRequest{Name: "c", Kind: kinds[rng.IntN(len(kinds))], Count: int32(rng.IntN(2) + 1)}
			switch rng.IntN(3) {
			case 0:
				c.MemoryMiB = int64(rng.IntN(8)+1) * 1000
			case 1:
				c.MemoryPercent = int32(rng.IntN(4)+1) * 20
			}
			c.Cores = []int32{0, 0, 30, 100}[rng.IntN(4)]
			containers = append(containers, c)
		}
		req := request(containers...)
		got, ok := ft.Use(n, req)
		assignment, failure := Fit(n, req)
		if ok != (failure == nil) {
			t.Fatalf("case %d: Use says fits %v, Fit says %v", i, ok, failure)
		}
		if !ok {
			continue
		}
		if want := UseOf(assignment, n); got != want {
			t.Fatalf("case %d: Use = %+v, UseOf(Fit) = %+v", i, got, want)
		}
		if least := LeastUse(req); least.Max(got) != got {
			t.Fatalf("case %d: LeastUse = %+v is more than Use = %+v", i, least, got)
		}
	}
}

func TestLeastUse(t *testing.T) {
	req := request(
		app("mib", 2, 3000, 0),
		app("pct", 1, 0, 30),
		gpurequest.ContainerRequest{Name: "pct", Kind: gpuv1alpha1.ContainerApp, Count: 1, MemoryPercent: 50},
		app("whole", 1, 0, 0),
		app("exclusive", 1, 1000, 100),
	)
	want := Use{MemoryMiB: 7000, Cores: 30 + 100 + 100, GPUs: 6}
	if got := LeastUse(req); got != want {
		t.Errorf("LeastUse = %+v, want %+v", got, want)
	}
}
