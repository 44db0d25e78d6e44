package placement

import (
	"math/rand/v2"
	"testing"

	"github.com/tessera-gpu/tessera/gpurequest"
)

// TestSearchGivesUpAtItsBound builds a pod the exact search cannot settle:
// 33 containers of just over 500 MiB, all different, and one of 10 MiB, for
// 32 GPUs of 1000 MiB free, all slightly different so that no two are
// twins. Every total fits; only the packing does not, and proving that
// means trying the permutations.
func TestSearchGivesUpAtItsBound(t *testing.T) {
	n := node(idle(32)...)
	for i := range n.Devices {
		n.Devices[i].MemoryMiB = 1000 + int64(i)
		n.Devices[i].UsedMemoryMiB = int64(i)
	}
	containers := []gpurequest.ContainerRequest{app("small", 1, 10, 0)}
	for i := range 33 {
		containers = append(containers, app("c", 1, int64(501+i), 0))
	}
	_, failure := Fit(n, request(containers...))
	if failure == nil {
		t.Fatal("Fit() placed 33 containers of over 500 MiB on 32 GPUs of 1000 MiB")
	}
	if failure.Detail != DetailSearchLimit || failure.Unresolvable {
		t.Errorf("failure = %+v (%v), want the search limit, resolvable", failure, failure)
	}
}

// TestSearchSettlesLargeSymmetricNodes checks that the symmetry cuts keep
// the search well inside its bound on a node of 64 GPUs of two shapes,
// where greedy fails and the permutations of equal containers and GPUs
// alone would exceed the bound many times over.
func TestSearchSettlesLargeSymmetricNodes(t *testing.T) {
	n := node(idle(64)...)
	for i := range n.Devices {
		d := &n.Devices[i]
		if i < 32 {
			d.MemoryMiB = 6000
		} else {
			d.MemoryMiB, d.UsedMemoryMiB, d.UsedCores, d.UsedShares = 24000, 12000, 50, 1
		}
	}
	var containers []gpurequest.ContainerRequest
	for range 4 {
		containers = append(containers, app("small", 8, 5000, 80), app("large", 8, 6000, 10))
	}
	tests := []struct {
		name string
		req  *Request
		fits bool
	}{
		{name: "large containers go to the busy GPUs and small ones to the empty", req: request(containers...), fits: true},
		{name: "one small container too many does not fit", req: request(append(containers, app("small", 8, 5000, 80))...), fits: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := engine{}
			if e.place(n, tt.req, true) != tt.fits {
				t.Fatalf("place() = %v, want %v", !tt.fits, tt.fits)
			}
			if e.steps == 0 || e.steps > MaxSearchSteps/2 {
				t.Errorf("search took %d steps, want some and at most %d", e.steps, MaxSearchSteps/2)
			}
			if tt.fits {
				got, failure := Fit(n, tt.req)
				if failure != nil {
					t.Fatal(failure)
				}
				if err := checkPlacement(n, tt.req, positions(t, n, got)); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestFeasibleAndLoadAllocateNothing pins what filtering thousands of nodes
// relies on: no garbage per node, whether the pod fits or not.
func TestFeasibleAndLoadAllocateNothing(t *testing.T) {
	n := node(with(gpu(0), used(40960, 50, 2)), gpu(1), with(gpu(2), numa(1)), with(gpu(3), used(81920, 100, 1)))
	tests := []struct {
		name string
		req  *Request
	}{
		{name: "one container that fits", req: request(app("a", 1, 8192, 20))},
		{name: "one container refused", req: request(app("a", 4, 0, 100))},
		{name: "several containers with an init and a sidecar", req: request(
			kind("Init", app("i", 2, 8192, 20)), kind("Sidecar", app("s", 1, 1000, 10)), app("a", 1, 8192, 20), app("b", 2, 4096, 0))},
		{name: "containers that do not fit together", req: request(app("a", 3, 0, 0), app("b", 1, 0, 0))},
		{name: "NUMA bound with type filter", req: &Request{
			Containers: []gpurequest.ContainerRequest{app("a", 2, 8192, 20)},
			Selection:  gpurequest.Selection{NUMABind: true, Types: []string{"a100"}, ExcludeUUIDs: []string{"GPU-9"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f Failure
			var ft Fitter
			allocs := testing.AllocsPerRun(100, func() {
				if !ft.Feasible(n, tt.req, &f) {
					_ = f.Fit
				}
				_, _ = ft.Load(n, tt.req)
			})
			if allocs != 0 {
				t.Errorf("Feasible and Load allocate %v times per run, want 0", allocs)
			}
		})
	}
}

// TestSearchStaysSmallOnEightGPUNodes pins what MaxSearchSteps documents:
// random pods of up to 6 containers of up to 4 GPUs each on random 8-GPU
// nodes are settled, fitting or not, in a fraction of the bound.
func TestSearchStaysSmallOnEightGPUNodes(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	searched, most := 0, 0
	for range 3000 {
		n := randomNode(r, 8, true)
		req := randomRequest(r, n, 6)
		for i := range req.Containers {
			req.Containers[i].Count = int32(1 + r.IntN(4))
		}
		e := engine{}
		e.place(n, req, true)
		if e.steps > 0 {
			searched++
		}
		most = max(most, e.steps)
	}
	t.Logf("%d of 3000 pods searched, at most %d steps", searched, most)
	if searched == 0 || most > 6000 {
		t.Errorf("search took up to %d steps over %d pods, want some searches and at most 6000", most, searched)
	}
}
