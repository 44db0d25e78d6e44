package placement

import (
	"reflect"
	"testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

func TestFit(t *testing.T) {
	init := gpuv1alpha1.ContainerInit
	sidecar := gpuv1alpha1.ContainerSidecar
	withSel := func(r *Request, sel gpurequest.Selection) *Request { r.Selection = sel; return r }
	withPolicy := func(r *Request, p gpurequest.Policy) *Request { r.GPUPolicy = p; return r }
	cordoned := func(d *Device) { d.Cordoned = true }
	unhealthy := func(d *Device) { d.Healthy = false }
	shareLimit := func(n int32) func(*Device) { return func(d *Device) { d.ShareLimit = n } }
	capacity := func(mem int64, cores int32) func(*Device) {
		return func(d *Device) { d.MemoryMiB, d.Cores = mem, cores }
	}
	percent := func(c gpurequest.ContainerRequest, p int32) gpurequest.ContainerRequest {
		c.MemoryMiB, c.MemoryPercent = 0, p
		return c
	}

	tests := []struct {
		name string
		node *Node
		req  *Request
		// want is each container's GPUs when the pod fits.
		want [][]string
		// wantCounts, wantDetail and wantUnresolvable describe a refusal.
		wantCounts       map[Reason]int32
		wantDetail       Detail
		wantUnresolvable bool
	}{
		{
			name: "healthy GPU fits",
			node: node(gpu(0)),
			req:  request(app("a", 1, 1000, 10)),
			want: [][]string{{"GPU-0"}},
		},
		{
			name:             "unhealthy GPU does not fit",
			node:             node(with(gpu(0), unhealthy), gpu(1)),
			req:              request(app("a", 2, 1000, 10)),
			wantCounts:       map[Reason]int32{ReasonUnhealthy: 1},
			wantDetail:       DetailTooFew,
			wantUnresolvable: true,
		},
		{
			name: "uncordoned GPU is used beside a cordoned one",
			node: node(with(gpu(0), cordoned), gpu(1)),
			req:  request(app("a", 1, 1000, 10)),
			want: [][]string{{"GPU-1"}},
		},
		{
			name:             "cordoned GPU does not fit",
			node:             node(with(gpu(0), cordoned)),
			req:              request(app("a", 1, 1000, 10)),
			wantCounts:       map[Reason]int32{ReasonCordoned: 1},
			wantDetail:       DetailTooFew,
			wantUnresolvable: true,
		},
		{
			name: "type filter matches part of the model, ignoring case",
			node: node(with(gpu(0), model("Tesla T4")), gpu(1)),
			req:  withSel(request(app("a", 1, 1000, 10)), gpurequest.Selection{Types: []string{"a100"}}),
			want: [][]string{{"GPU-1"}},
		},
		{
			name:             "type filter refuses other models",
			node:             node(with(gpu(0), model("Tesla T4"))),
			req:              withSel(request(app("a", 1, 1000, 10)), gpurequest.Selection{Types: []string{"a100", "h100"}}),
			wantCounts:       map[Reason]int32{ReasonTypeMismatch: 1},
			wantDetail:       DetailTooFew,
			wantUnresolvable: true,
		},
		{
			name: "excluded type is skipped",
			node: node(gpu(0), with(gpu(1), model("Tesla T4"))),
			req:  withSel(request(app("a", 1, 1000, 10)), gpurequest.Selection{ExcludeTypes: []string{"A100"}}),
			want: [][]string{{"GPU-1"}},
		},
		{
			name:             "excluded type does not fit",
			node:             node(gpu(0)),
			req:              withSel(request(app("a", 1, 1000, 10)), gpurequest.Selection{ExcludeTypes: []string{"a100"}}),
			wantCounts:       map[Reason]int32{ReasonTypeMismatch: 1},
			wantDetail:       DetailTooFew,
			wantUnresolvable: true,
		},
		{
			name: "UUID list picks the listed GPU",
			node: node(idle(3)...),
			req:  withSel(request(app("a", 1, 1000, 10)), gpurequest.Selection{UUIDs: []string{"GPU-2"}}),
			want: [][]string{{"GPU-2"}},
		},
		{
			name:             "GPU not in the UUID list does not fit",
			node:             node(idle(2)...),
			req:              withSel(request(app("a", 1, 1000, 10)), gpurequest.Selection{UUIDs: []string{"GPU-7"}}),
			wantCounts:       nil, // GPUs the pod did not select are not counted
			wantDetail:       DetailTooFew,
			wantUnresolvable: true,
		},
		{
			name: "excluded UUID is skipped",
			node: node(idle(2)...),
			req:  withSel(request(app("a", 1, 1000, 10)), gpurequest.Selection{ExcludeUUIDs: []string{"GPU-0"}}),
			want: [][]string{{"GPU-1"}},
		},
		{
			name: "GPU with a free share fits",
			node: node(with(gpu(0), shareLimit(2), used(1000, 10, 1))),
			req:  request(app("a", 1, 1000, 10)),
			want: [][]string{{"GPU-0"}},
		},
		{
			name:       "GPU at its share limit does not fit",
			node:       node(with(gpu(0), shareLimit(2), used(1000, 10, 2))),
			req:        request(app("a", 1, 1000, 10)),
			wantCounts: map[Reason]int32{ReasonShareLimit: 1},
			wantDetail: DetailTooFew,
		},
		{
			name: "GPU with just enough free memory fits",
			node: node(with(gpu(0), used(71920, 10, 1))),
			req:  request(app("a", 1, 10000, 10)),
			want: [][]string{{"GPU-0"}},
		},
		{
			name:       "GPU without enough free memory does not fit",
			node:       node(with(gpu(0), used(71921, 10, 1))),
			req:        request(app("a", 1, 10000, 10)),
			wantCounts: map[Reason]int32{ReasonMemory: 1},
			wantDetail: DetailTooFew,
		},
		{
			name:             "memory over any GPU's capacity is unresolvable",
			node:             node(idle(2)...),
			req:              request(app("a", 1, 100000, 10)),
			wantCounts:       map[Reason]int32{ReasonMemory: 2},
			wantDetail:       DetailTooFew,
			wantUnresolvable: true,
		},
		{
			name: "memory percentage is of the GPU's capacity",
			node: node(with(gpu(0), used(40960, 10, 1))),
			req:  request(percent(app("a", 1, 0, 10), 50)),
			want: [][]string{{"GPU-0"}},
		},
		{
			name:       "memory percentage over the free memory does not fit",
			node:       node(with(gpu(0), used(40961, 10, 1))),
			req:        request(percent(app("a", 1, 0, 10), 50)),
			wantCounts: map[Reason]int32{ReasonMemory: 1},
			wantDetail: DetailTooFew,
		},
		{
			name: "no memory asked takes an unused GPU's whole memory",
			node: node(with(gpu(0), used(1, 10, 1)), gpu(1)),
			req:  request(app("a", 1, 0, 10)),
			want: [][]string{{"GPU-1"}},
		},
		{
			name:       "no memory asked refuses a GPU with any memory used",
			node:       node(with(gpu(0), used(1, 0, 1))),
			req:        request(app("a", 1, 0, 10)),
			wantCounts: map[Reason]int32{ReasonMemory: 1},
			wantDetail: DetailTooFew,
		},
		{
			name: "GPU with just enough free cores fits",
			node: node(with(gpu(0), used(1000, 70, 1))),
			req:  request(app("a", 1, 1000, 30)),
			want: [][]string{{"GPU-0"}},
		},
		{
			name:       "GPU without enough free cores does not fit",
			node:       node(with(gpu(0), used(1000, 71, 1))),
			req:        request(app("a", 1, 1000, 30)),
			wantCounts: map[Reason]int32{ReasonCores: 1},
			wantDetail: DetailTooFew,
		},
		{
			name: "100 cores takes an unused GPU",
			node: node(with(gpu(0), used(1000, 0, 1)), gpu(1)),
			req:  request(app("a", 1, 1000, 100)),
			want: [][]string{{"GPU-1"}},
		},
		{
			name:       "100 cores refuses a GPU with another user, even one asking no cores",
			node:       node(with(gpu(0), used(1000, 0, 1))),
			req:        request(app("a", 1, 1000, 100)),
			wantCounts: map[Reason]int32{ReasonExclusiveTaken: 1},
			wantDetail: DetailTooFew,
		},
		{
			name: "zero cores fits a GPU whose cores are partly taken",
			node: node(with(gpu(0), used(1000, 99, 1))),
			req:  request(app("a", 1, 1000, 0)),
			want: [][]string{{"GPU-0"}},
		},
		{
			name:       "zero cores does not fit a GPU whose cores are fully taken",
			node:       node(with(gpu(0), used(1000, 100, 1))),
			req:        request(app("a", 1, 1000, 0)),
			wantCounts: map[Reason]int32{ReasonCores: 1},
			wantDetail: DetailTooFew,
		},
		{
			name: "exclusive use of a GPU with scaled cores takes all its cores",
			node: node(with(gpu(0), capacity(81920, 200))),
			req:  request(app("a", 1, 1000, 100)),
			want: [][]string{{"GPU-0"}},
		},
		{
			name: "count is met with distinct GPUs",
			node: node(idle(3)...),
			req:  request(app("a", 2, 1000, 10)),
			want: [][]string{{"GPU-0", "GPU-1"}},
		},
		{
			name:       "count larger than the GPUs that fit is refused",
			node:       node(gpu(0), with(gpu(1), used(81920, 0, 1))),
			req:        request(app("a", 2, 1000, 10)),
			wantCounts: map[Reason]int32{ReasonMemory: 1},
			wantDetail: DetailTooFew,
		},
		{
			name: "NUMA binding puts a container's GPUs on one NUMA node",
			node: node(with(gpu(0), numa(0)), with(gpu(1), numa(1)), with(gpu(2), numa(1))),
			req:  withSel(request(app("a", 2, 1000, 10)), gpurequest.Selection{NUMABind: true}),
			want: [][]string{{"GPU-1", "GPU-2"}},
		},
		{
			name:             "NUMA binding refuses GPUs split over NUMA nodes",
			node:             node(with(gpu(0), numa(0)), with(gpu(1), numa(1))),
			req:              withSel(request(app("a", 2, 1000, 10)), gpurequest.Selection{NUMABind: true}),
			wantCounts:       map[Reason]int32{ReasonNUMA: 2},
			wantDetail:       DetailTooFew,
			wantUnresolvable: true,
		},
		{
			name: "without NUMA binding GPUs may span NUMA nodes",
			node: node(with(gpu(0), numa(0)), with(gpu(1), numa(1))),
			req:  request(app("a", 2, 1000, 10)),
			want: [][]string{{"GPU-0", "GPU-1"}},
		},
		{
			name: "spread picks the emptiest GPU",
			node: node(with(gpu(0), used(40000, 50, 2)), gpu(1), with(gpu(2), used(1000, 10, 1))),
			req:  withPolicy(request(app("a", 1, 1000, 10)), gpurequest.Spread),
			want: [][]string{{"GPU-1"}},
		},
		{
			name: "binpack picks the busiest GPU that fits",
			node: node(with(gpu(0), used(40000, 50, 2)), gpu(1), with(gpu(2), used(80000, 90, 1))),
			req:  withPolicy(request(app("a", 1, 1000, 20)), gpurequest.Binpack),
			want: [][]string{{"GPU-0"}},
		},
		{
			name: "equal GPUs are picked by index",
			node: node(gpu(3), gpu(1), gpu(2)),
			req:  request(app("a", 2, 1000, 10)),
			want: [][]string{{"GPU-1", "GPU-2"}},
		},
		{
			name: "two containers of a pod share a GPU",
			node: node(gpu(0)),
			req:  request(app("a", 1, 40000, 50), app("b", 1, 40000, 50)),
			want: [][]string{{"GPU-0"}, {"GPU-0"}},
		},
		{
			name:             "two containers running together need the sum of their requests",
			node:             node(gpu(0)),
			req:              request(app("a", 1, 40000, 60), app("b", 1, 40000, 50)),
			wantDetail:       DetailTogether,
			wantUnresolvable: true,
		},
		{
			name:       "containers that would fit an empty node together are refused as resolvable",
			node:       node(with(gpu(0), used(1000, 10, 1))),
			req:        request(app("a", 1, 40000, 46), app("b", 1, 40000, 46)),
			wantDetail: DetailTogether,
		},
		{
			name: "binpack puts a pod's containers on one GPU",
			node: node(idle(2)...),
			req:  withPolicy(request(app("a", 1, 1000, 10), app("b", 1, 1000, 10)), gpurequest.Binpack),
			want: [][]string{{"GPU-0"}, {"GPU-0"}},
		},
		{
			name: "spread puts a pod's containers on different GPUs",
			node: node(idle(2)...),
			req:  withPolicy(request(app("a", 1, 1000, 10), app("b", 1, 1000, 10)), gpurequest.Spread),
			want: [][]string{{"GPU-0"}, {"GPU-1"}},
		},
		{
			name: "NUMA binding holds per container, not across the pod",
			node: node(with(gpu(0), numa(0), used(81920, 0, 1)), with(gpu(1), numa(0)), with(gpu(2), numa(1)), with(gpu(3), numa(1))),
			req: withSel(request(app("a", 2, 80000, 10), app("b", 1, 80000, 10)),
				gpurequest.Selection{NUMABind: true}),
			want: [][]string{{"GPU-2", "GPU-3"}, {"GPU-1"}},
		},
		{
			name: "an init container does not run beside the app containers",
			node: node(gpu(0)),
			req:  request(kind(init, app("i", 1, 80000, 100)), app("a", 1, 80000, 100)),
			want: [][]string{{"GPU-0"}, {"GPU-0"}},
		},
		{
			name: "an init container runs beside the sidecars started before it",
			node: node(gpu(0), gpu(1)),
			req: withPolicy(request(kind(sidecar, app("s", 1, 40000, 40)), kind(init, app("i", 1, 50000, 70)),
				app("a", 1, 1000, 10)), gpurequest.Binpack),
			want: [][]string{{"GPU-0"}, {"GPU-1"}, {"GPU-0"}},
		},
		{
			name:             "an init container that cannot run beside an earlier sidecar is refused",
			node:             node(gpu(0)),
			req:              request(kind(sidecar, app("s", 1, 40000, 40)), kind(init, app("i", 1, 50000, 70))),
			wantDetail:       DetailTogether,
			wantUnresolvable: true,
		},
		{
			name: "a sidecar started after an init container does not run beside it",
			node: node(gpu(0)),
			req:  request(kind(init, app("i", 1, 50000, 70)), kind(sidecar, app("s", 1, 40000, 40))),
			want: [][]string{{"GPU-0"}, {"GPU-0"}},
		},
		{
			name: "the exact search finds what greedy misses",
			// Spread puts the larger-memory container on the empty GPU 0 first,
			// which leaves the 80-core container nowhere; swapped, both fit.
			node: node(with(gpu(0), capacity(6000, 100)), with(gpu(1), capacity(24000, 100), used(12000, 50, 1))),
			req:  request(app("small", 1, 5000, 80), app("large", 1, 6000, 10)),
			want: [][]string{{"GPU-0"}, {"GPU-1"}},
		},
		{
			name: "no GPU containers fit anywhere",
			node: node(),
			req:  request(),
			want: [][]string{},
		},
		{
			name:             "a node with more GPUs than placement handles is refused",
			node:             node(idle(MaxDevices + 1)...),
			req:              request(app("a", 1, 1000, 10)),
			wantDetail:       DetailTooManyDevices,
			wantUnresolvable: true,
		},
		{
			name:             "a request out of limits is refused",
			node:             node(idle(1)...),
			req:              request(app("a", 1, 1000, 101)),
			wantDetail:       DetailInvalidRequest,
			wantUnresolvable: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := clone(tt.node)
			got, failure := Fit(tt.node, tt.req)
			if !reflect.DeepEqual(tt.node, before) {
				t.Errorf("Fit changed the node")
			}
			var f Failure
			if feasible := new(Fitter).Feasible(tt.node, tt.req, &f); feasible != (failure == nil) {
				t.Errorf("Feasible() = %v, Fit failure = %v", feasible, failure)
			}
			if tt.want != nil {
				if failure != nil {
					t.Fatalf("Fit() failed: %v", failure)
				}
				if g := uuids(got); !reflect.DeepEqual(g, tt.want) {
					t.Errorf("Fit() GPUs = %v, want %v", g, tt.want)
				}
				return
			}
			if failure == nil {
				t.Fatalf("Fit() = %v, want a failure", uuids(got))
			}
			if f != *failure {
				t.Errorf("Feasible() failure = %+v, Fit failure = %+v", f, *failure)
			}
			var wantCounts [NumReasons]int32
			for r, n := range tt.wantCounts {
				wantCounts[r] = n
			}
			if failure.Counts != wantCounts {
				t.Errorf("failure counts = %v, want %v (%v)", failure.Counts, wantCounts, failure)
			}
			if failure.Detail != tt.wantDetail {
				t.Errorf("failure detail = %v, want %v (%v)", failure.Detail, tt.wantDetail, failure)
			}
			if failure.Unresolvable != tt.wantUnresolvable {
				t.Errorf("failure unresolvable = %v, want %v (%v)", failure.Unresolvable, tt.wantUnresolvable, failure)
			}
		})
	}
}

func clone(n *Node) *Node {
	c := *n
	c.Devices = append([]Device(nil), n.Devices...)
	return &c
}

func TestFitAssignment(t *testing.T) {
	n := node(with(gpu(0), func(d *Device) { d.Cores = 200 }), with(gpu(5), func(d *Device) { d.MemoryMiB = 40960 }), gpu(7))
	req := &Request{
		Containers: []gpurequest.ContainerRequest{
			{Name: "init", Kind: gpuv1alpha1.ContainerInit, Count: 1, MemoryPercent: 25, Cores: 10},
			{Name: "whole", Kind: gpuv1alpha1.ContainerApp, Count: 1, Cores: 100},
			{Name: "part", Kind: gpuv1alpha1.ContainerApp, Count: 1, MemoryPercent: 50, Cores: 0},
		},
		Selection: gpurequest.Selection{UUIDs: []string{"gpu-0", "GPU-5"}},
		GPUPolicy: gpurequest.Spread,
	}
	got, failure := Fit(n, req)
	if failure != nil {
		t.Fatal(failure)
	}
	want := []gpuv1alpha1.ContainerAllocation{
		// Spread sends the init container to the GPU the app containers leave emptiest.
		{Name: "init", Kind: gpuv1alpha1.ContainerInit, Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-5", Index: 5, MemoryMiB: 10240, Cores: 10}}},
		// 100 cores of a GPU scaled to 200 take all 200, so that no one else fits beside.
		{Name: "whole", Kind: gpuv1alpha1.ContainerApp, Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-0", Index: 0, MemoryMiB: 81920, Cores: 200}}},
		{Name: "part", Kind: gpuv1alpha1.ContainerApp, Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-5", Index: 5, MemoryMiB: 20480, Cores: 0}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Fit() = %+v\nwant %+v", got, want)
	}
}
