package placement

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// placements lists runs of size slices starting at each of starts.
func placements(size int32, starts ...int32) []gpuv1alpha1.MIGPlacement {
	out := make([]gpuv1alpha1.MIGPlacement, len(starts))
	for i, s := range starts {
		out[i] = gpuv1alpha1.MIGPlacement{Start: s, Size: size}
	}
	return out
}

// a100Geometry is the MIG geometry NVML reports for an A100 80GB.
var a100Geometry = &gpuv1alpha1.MIGGeometry{Profiles: []gpuv1alpha1.MIGProfile{
	{Name: "1g.10gb", ProfileID: 19, MemoryMiB: 9856, ComputePercent: 14, Placements: placements(1, 0, 1, 2, 3, 4, 5, 6)},
	{Name: "1g.20gb", ProfileID: 15, MemoryMiB: 19968, ComputePercent: 14, Placements: placements(2, 0, 2, 4, 6)},
	{Name: "2g.20gb", ProfileID: 14, MemoryMiB: 19968, ComputePercent: 28, Placements: placements(2, 0, 2, 4)},
	{Name: "3g.40gb", ProfileID: 9, MemoryMiB: 40192, ComputePercent: 42, Placements: placements(4, 0, 4)},
	{Name: "4g.40gb", ProfileID: 5, MemoryMiB: 40192, ComputePercent: 57, Placements: placements(4, 0)},
	{Name: "7g.80gb", ProfileID: 0, MemoryMiB: 80896, ComputePercent: 100, Placements: placements(8, 0)},
}}

// dynamic is an idle A100 80GB with the given index that makes MIG
// instances on demand, up to 7 at once.
func dynamic(index int32, opts ...func(*Device)) Device {
	d := gpu(index)
	d.ShareLimit, d.MIG = 7, a100Geometry
	return with(d, opts...)
}

func slicesUsed(mask uint16) func(*Device) { return func(d *Device) { d.UsedSlices = mask } }

// migMode is a request in HAMi's MIG mode.
func migMode(containers ...gpurequest.ContainerRequest) *Request {
	r := request(containers...)
	r.Selection.Mode = gpurequest.ModeMIG
	return r
}

func migAlloc(profile string, id, start, size int32) *gpuv1alpha1.MIGAllocation {
	return &gpuv1alpha1.MIGAllocation{Profile: profile, ProfileID: id, Placement: gpuv1alpha1.MIGPlacement{Start: start, Size: size}}
}

func TestFitDynamicMIG(t *testing.T) {
	pct := func(c gpurequest.ContainerRequest, p int32) gpurequest.ContainerRequest {
		c.MemoryPercent = p
		return c
	}
	tests := []struct {
		name string
		node *Node
		req  *Request
		// want is, per container, its one device; wantReason the one
		// reason every GPU fails for.
		want       []gpuv1alpha1.DeviceAllocation
		wantReason Reason
		wantDetail Detail
	}{
		{
			name: "memory gets the smallest profile that holds it, at the first slice",
			node: node(dynamic(0)),
			req:  migMode(app("a", 1, 8000, 0)),
			want: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-0", MemoryMiB: 9856, Cores: 14, MIG: migAlloc("1g.10gb", 19, 0, 1)}},
		},
		{
			name: "of profiles of equal memory the one with the least compute",
			node: node(dynamic(0)),
			req:  migMode(app("a", 1, 15000, 0)),
			want: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-0", MemoryMiB: 19968, Cores: 14, MIG: migAlloc("1g.20gb", 15, 0, 2)}},
		},
		{
			name: "cores count as well as memory",
			node: node(dynamic(0)),
			req:  migMode(app("a", 1, 15000, 20)),
			want: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-0", MemoryMiB: 19968, Cores: 28, MIG: migAlloc("2g.20gb", 14, 0, 2)}},
		},
		{
			name: "a percentage is of the GPU's memory",
			node: node(dynamic(0)),
			req:  migMode(pct(app("a", 1, 0, 0), 40)),
			want: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-0", MemoryMiB: 40192, Cores: 42, MIG: migAlloc("3g.40gb", 9, 0, 4)}},
		},
		{
			name: "no memory asked gets the largest profile",
			node: node(dynamic(0)),
			req:  migMode(app("a", 1, 0, 0)),
			want: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-0", MemoryMiB: 80896, Cores: 100, MIG: migAlloc("7g.80gb", 0, 0, 8)}},
		},
		{
			name: "the instance goes at the first free run of slices",
			node: node(dynamic(0, slicesUsed(0b1), used(9856, 14, 1))),
			req:  migMode(app("a", 1, 30000, 0)),
			want: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-0", MemoryMiB: 40192, Cores: 42, MIG: migAlloc("3g.40gb", 9, 4, 4)}},
		},
		{
			name: "two containers get instances that do not overlap",
			node: node(dynamic(0)),
			req:  migMode(app("a", 1, 8000, 0), app("b", 1, 8000, 0)),
			want: []gpuv1alpha1.DeviceAllocation{
				{UUID: "GPU-0", MemoryMiB: 9856, Cores: 14, MIG: migAlloc("1g.10gb", 19, 0, 1)},
				{UUID: "GPU-0", MemoryMiB: 9856, Cores: 14, MIG: migAlloc("1g.10gb", 19, 1, 1)},
			},
		},
		{
			name: "an Init container's instance does not overlap the App's",
			node: node(dynamic(0)),
			req:  migMode(kind(gpuv1alpha1.ContainerInit, app("i", 1, 8000, 0)), app("a", 1, 8000, 0)),
			want: []gpuv1alpha1.DeviceAllocation{
				{UUID: "GPU-0", MemoryMiB: 9856, Cores: 14, MIG: migAlloc("1g.10gb", 19, 1, 1)},
				{UUID: "GPU-0", MemoryMiB: 9856, Cores: 14, MIG: migAlloc("1g.10gb", 19, 0, 1)},
			},
		},
		{
			name:       "no free run of slices",
			node:       node(dynamic(0, slicesUsed(0b1111111), used(7*9856, 98, 7)), dynamic(1, slicesUsed(0b100001), used(19968, 28, 2))),
			req:        migMode(app("a", 1, 30000, 0)),
			want:       nil,
			wantReason: ReasonMIGRoom,
		},
		{
			name:       "an Init container and an App that find room only one at a time",
			node:       node(dynamic(0, slicesUsed(0b0111111), used(6*9856, 84, 6))),
			req:        migMode(kind(gpuv1alpha1.ContainerInit, app("i", 1, 8000, 0)), app("a", 1, 8000, 0)),
			wantDetail: DetailTogether,
		},
		{
			name:       "more memory than any profile",
			node:       node(dynamic(0)),
			req:        migMode(app("a", 1, 81000, 0)),
			wantReason: ReasonMemory,
		},
		{
			name:       "a hami-core pod is refused",
			node:       node(dynamic(0)),
			req:        withMode(request(app("a", 1, 8000, 0)), gpurequest.ModeShared),
			wantReason: ReasonTypeMismatch,
		},
		{
			name:       "a pod that does not ask for MIG is refused",
			node:       node(dynamic(0)),
			req:        request(app("a", 1, 8000, 0)),
			wantReason: ReasonMIGOnly,
		},
		{
			name:       "a pod that names a profile is left to laid-out instances",
			node:       node(dynamic(0)),
			req:        &Request{Containers: []gpurequest.ContainerRequest{app("a", 1, 8000, 0)}, Selection: gpurequest.Selection{MIGProfiles: []string{"1g.10gb"}}},
			wantReason: ReasonMIGProfile,
		},
		{
			name:       "a container gets one instance",
			node:       node(dynamic(0), dynamic(1)),
			req:        migMode(app("a", 2, 8000, 0)),
			wantReason: ReasonMIGCount,
		},
		{
			name:       "no more instances than the share limit",
			node:       node(dynamic(0, slicesUsed(0b1), used(9856, 14, 7))),
			req:        migMode(app("a", 1, 8000, 0)),
			wantReason: ReasonShareLimit,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, failure := Fit(tt.node, tt.req)
			if feasible := new(Fitter).Feasible(tt.node, tt.req, nil); feasible != (failure == nil) {
				t.Errorf("Feasible() = %v, Fit failure = %v", feasible, failure)
			}
			if tt.want == nil {
				if failure == nil || (tt.wantDetail != DetailNone && failure.Detail != tt.wantDetail) {
					t.Fatalf("Fit() = %+v, %v, want a failure of detail %v", got, failure, tt.wantDetail)
				}
				for r, n := range failure.Counts {
					if n != 0 && Reason(r) != tt.wantReason {
						t.Errorf("failure %v, want every GPU failing for %v", failure, tt.wantReason)
					}
				}
				return
			}
			if failure != nil {
				t.Fatalf("Fit() failed: %v", failure)
			}
			var devices []gpuv1alpha1.DeviceAllocation
			for _, c := range got {
				devices = append(devices, c.Devices...)
			}
			if !reflect.DeepEqual(devices, tt.want) {
				t.Errorf("Fit() devices\n%+v\nwant\n%+v", devices, tt.want)
			}
		})
	}
}

func withMode(r *Request, m gpurequest.Mode) *Request { r.Selection.Mode = m; return r }

// TestDynamicMIGFailureWords pins the words a pod is told when no GPU has
// room for its instance.
func TestDynamicMIGFailureWords(t *testing.T) {
	_, failure := Fit(node(dynamic(0, slicesUsed(0xff), used(80896, 100, 1))), migMode(app("a", 1, 8000, 0)))
	if want := "node(s) had 0/1 GPUs that fit (1 no room for the MIG instance)"; failure == nil || failure.Error() != want {
		t.Errorf("failure %v, want %q", failure, want)
	}
}

// TestDynamicMIGNeverOverlaps places and removes random MIG-mode pods on
// a node of GPUs that make instances on demand, thousands of times, and
// checks every placement against a simple model: the instances on a GPU
// never share a slice, each lies where its profile may, is the smallest
// profile that holds the container, and a one-container pod is refused
// only when no GPU has a free run for that profile.
func TestDynamicMIGNeverOverlaps(t *testing.T) {
	const steps = 5000
	rng := rand.New(rand.NewPCG(35, 1))
	n := node(dynamic(0), dynamic(1), dynamic(2))
	n.Devices[2].ShareLimit = 3
	type live struct {
		holds []Hold
		alloc []gpuv1alpha1.ContainerAllocation
	}
	var pods []live
	memories := []int64{0, 1000, 9856, 12000, 20000, 30000, 40192, 50000, 80896}
	placed, refused := 0, 0
	for step := range steps {
		if len(pods) > 0 && rng.IntN(3) == 0 {
			k := rng.IntN(len(pods))
			n.Remove(pods[k].holds)
			pods = append(pods[:k], pods[k+1:]...)
			continue
		}
		var cs []gpurequest.ContainerRequest
		for c := range 1 + rng.IntN(3) {
			cr := app(fmt.Sprint("c", c), 1, memories[rng.IntN(len(memories))], int32(rng.IntN(3))*20)
			if c == 0 && rng.IntN(4) == 0 {
				cr.Kind = gpuv1alpha1.ContainerInit
			}
			cs = append(cs, cr)
		}
		req := migMode(cs...)
		got, failure := Fit(n, req)
		if feasible := new(Fitter).Feasible(n, req, nil); feasible != (failure == nil) {
			t.Fatalf("step %d: Feasible() = %v, Fit failure = %v", step, feasible, failure)
		}
		if failure != nil {
			refused++
			if len(cs) == 1 && modelFits(n, &cs[0]) {
				t.Fatalf("step %d: %+v refused (%v), but the model has room", step, cs[0], failure)
			}
			continue
		}
		placed++
		checkInstances(t, step, n, &cs, got)
		pods = append(pods, live{holds: Holds(got), alloc: got})
		n.Add(pods[len(pods)-1].holds)
		allocs := make([][]gpuv1alpha1.ContainerAllocation, len(pods))
		for i := range pods {
			allocs[i] = pods[i].alloc
		}
		checkNoOverlap(t, step, n, allocs)
	}
	if placed < steps/4 || refused < steps/20 {
		t.Errorf("placed %d and refused %d of %d: the steps do not exercise both", placed, refused, steps)
	}
}

// modelFits reports whether some GPU of n has a free run of slices for
// the smallest profile that holds c, and a share left.
func modelFits(n *Node, c *gpurequest.ContainerRequest) bool {
	for i := range n.Devices {
		d := &n.Devices[i]
		p := modelProfile(d, c)
		if p == nil || d.UsedShares >= d.ShareLimit {
			continue
		}
		for _, pl := range p.Placements {
			free := true
			for s := pl.Start; s < pl.Start+pl.Size; s++ {
				free = free && d.UsedSlices&(1<<s) == 0
			}
			if free {
				return true
			}
		}
	}
	return false
}

// modelProfile is the profile a container should get, found by sorting
// every profile that holds it.
func modelProfile(d *Device, c *gpurequest.ContainerRequest) *gpuv1alpha1.MIGProfile {
	var best *gpuv1alpha1.MIGProfile
	for i := range d.MIG.Profiles {
		p := &d.MIG.Profiles[i]
		fits := p.ComputePercent >= c.Cores && (c.MemoryMiB == 0 || p.MemoryMiB >= c.MemoryMiB)
		if !fits {
			continue
		}
		better := best == nil ||
			(c.MemoryMiB == 0 && p.MemoryMiB > best.MemoryMiB) ||
			(c.MemoryMiB > 0 && (p.MemoryMiB < best.MemoryMiB || p.MemoryMiB == best.MemoryMiB && p.ComputePercent < best.ComputePercent))
		if better {
			best = p
		}
	}
	return best
}

// checkInstances checks that each container got one instance, of the
// profile the model picks, at a placement its profile has.
func checkInstances(t *testing.T, step int, n *Node, cs *[]gpurequest.ContainerRequest, got []gpuv1alpha1.ContainerAllocation) {
	t.Helper()
	for c, ca := range got {
		if len(ca.Devices) != 1 || ca.Devices[0].MIG == nil {
			t.Fatalf("step %d: container %d got %+v, want one instance", step, c, ca.Devices)
		}
		da := ca.Devices[0]
		want := modelProfile(n.device(da.UUID), &(*cs)[c])
		if want == nil || da.MIG.Profile != want.Name || da.MemoryMiB != want.MemoryMiB || da.Cores != want.ComputePercent {
			t.Fatalf("step %d: container %+v got %+v on %s, want profile %+v", step, (*cs)[c], da.MIG, da.UUID, want)
		}
		found := false
		for _, pl := range want.Placements {
			found = found || pl == da.MIG.Placement
		}
		if !found {
			t.Fatalf("step %d: %+v lies where %s may not", step, da.MIG, want.Name)
		}
	}
}

// checkNoOverlap checks, from the live pods' allocations alone, that no
// two instances on a GPU share a slice, and that the node's usage holds
// exactly their slices and no more instances than the share limit.
func checkNoOverlap(t *testing.T, step int, n *Node, allocs [][]gpuv1alpha1.ContainerAllocation) {
	t.Helper()
	taken := map[string]uint16{}
	count := map[string]int32{}
	for _, alloc := range allocs {
		for _, c := range alloc {
			for _, d := range c.Devices {
				var mask uint16
				for s := d.MIG.Placement.Start; s < d.MIG.Placement.Start+d.MIG.Placement.Size; s++ {
					mask |= 1 << s
				}
				if taken[d.UUID]&mask != 0 {
					t.Fatalf("step %d: %s: %+v overlaps slices %b", step, d.UUID, d.MIG, taken[d.UUID])
				}
				taken[d.UUID] |= mask
				count[d.UUID]++
			}
		}
	}
	for i := range n.Devices {
		d := &n.Devices[i]
		if d.UsedSlices != taken[d.UUID] {
			t.Fatalf("step %d: %s holds slices %b, the pods take %b", step, d.UUID, d.UsedSlices, taken[d.UUID])
		}
		if d.UsedMemoryMiB > d.MemoryMiB || d.UsedCores > d.Cores {
			t.Fatalf("step %d: %s over-committed: %+v", step, d.UUID, d)
		}
	}
}
