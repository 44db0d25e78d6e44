package placement

import (
	"testing"

	"github.com/tessera-gpu/tessera/gpurequest"
)

func TestFailureError(t *testing.T) {
	counts := func(pairs ...any) [NumReasons]int32 {
		var c [NumReasons]int32
		for i := 0; i < len(pairs); i += 2 {
			c[pairs[i].(Reason)] = int32(pairs[i+1].(int))
		}
		return c
	}
	tests := []struct {
		name    string
		failure Failure
		want    string
	}{
		{
			name:    "reasons are listed most first",
			failure: Failure{Total: 8, Counts: counts(ReasonShareLimit, 3, ReasonMemory, 5), Detail: DetailTooFew, Needed: 1},
			want:    "node(s) had 0/8 GPUs that fit (5 not enough memory, 3 share limit reached)",
		},
		{
			name:    "equal counts keep the order of the rules",
			failure: Failure{Total: 4, Counts: counts(ReasonCores, 2, ReasonUnhealthy, 2), Detail: DetailTooFew, Needed: 1},
			want:    "node(s) had 0/4 GPUs that fit (2 unhealthy, 2 not enough cores)",
		},
		{
			name:    "some GPUs fit but too few",
			failure: Failure{Total: 8, Fit: 2, Counts: counts(ReasonNUMA, 6), Detail: DetailTooFew, Needed: 4},
			want:    "node(s) had 2/8 GPUs that fit, 4 needed (6 too few on one NUMA node)",
		},
		{
			name:    "containers that do not fit together",
			failure: Failure{Total: 2, Fit: 2, Detail: DetailTogether},
			want:    "node(s) had 2/2 GPUs that fit, but not all the pod's containers at once",
		},
		{
			name:    "search limit",
			failure: Failure{Total: 2, Fit: 2, Detail: DetailSearchLimit},
			want:    "node(s) had 2/2 GPUs that fit, but the search for a placement gave up",
		},
		{
			name:    "too many devices",
			failure: Failure{Total: 65, Detail: DetailTooManyDevices},
			want:    "node(s) had 65 GPUs, more than placement handles (64)",
		},
		{
			name:    "invalid request",
			failure: Failure{Detail: DetailInvalidRequest},
			want:    "node(s) could not be checked: the pod's GPU request is out of placement's limits",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.failure.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestFailureNamesSelectedGPUs checks that a pod that selected GPUs by UUID
// is told, for each selected GPU on the node, why it cannot have it, and
// that the GPUs it did not select are left out.
func TestFailureNamesSelectedGPUs(t *testing.T) {
	selecting := func(r *Request, uuids ...string) *Request {
		r.Selection = gpurequest.Selection{UUIDs: uuids}
		return r
	}
	shareLimit := func(n int32) func(*Device) { return func(d *Device) { d.ShareLimit = n } }
	unhealthy := func(d *Device) { d.Healthy = false }
	tests := []struct {
		name             string
		node             *Node
		req              *Request
		want             string
		wantUnresolvable bool
	}{
		{
			name: "GPU held whole by another pod",
			node: node(with(gpu(0), used(81920, 0, 1)), gpu(1), gpu(2), gpu(3)),
			req:  selecting(request(app("a", 1, 1000, 10)), "GPU-0"),
			want: "node(s) had 0/1 of the pod's selected GPUs that fit (GPU-0, index 0: held whole by another pod)",
		},
		{
			name: "GPU held whole by another pod's exclusive compute",
			node: node(with(gpu(0), used(1000, 100, 1))),
			req:  selecting(request(app("a", 1, 1000, 0)), "gpu-0"),
			want: "node(s) had 0/1 of the pod's selected GPUs that fit (GPU-0, index 0: held whole by another pod)",
		},
		{
			name: "not enough memory says how much is free",
			node: node(with(gpu(0), used(80000, 20, 2)), gpu(1)),
			req:  selecting(request(app("a", 1, 4000, 10)), "GPU-0"),
			want: "node(s) had 0/1 of the pod's selected GPUs that fit (GPU-0, index 0: not enough memory, 1920 MiB free of 81920)",
		},
		{
			name: "compute fully allocated by several pods",
			node: node(with(gpu(0), used(2000, 100, 2))),
			req:  selecting(request(app("a", 1, 1000, 0)), "GPU-0"),
			want: "node(s) had 0/1 of the pod's selected GPUs that fit (GPU-0, index 0: its compute is fully allocated)",
		},
		{
			name: "not enough compute says how much is free",
			node: node(with(gpu(0), used(2000, 80, 2))),
			req:  selecting(request(app("a", 1, 1000, 30)), "GPU-0"),
			want: "node(s) had 0/1 of the pod's selected GPUs that fit (GPU-0, index 0: not enough compute, 20% free)",
		},
		{
			name: "share limit",
			node: node(with(gpu(0), shareLimit(2), used(2000, 20, 2))),
			req:  selecting(request(app("a", 1, 1000, 10)), "GPU-0"),
			want: "node(s) had 0/1 of the pod's selected GPUs that fit (GPU-0, index 0: shared by as many containers as it allows (2))",
		},
		{
			name: "the pod asks for a GPU whole that others use",
			node: node(with(gpu(0), used(2000, 20, 2))),
			req:  selecting(request(app("a", 1, 1000, 100)), "GPU-0"),
			want: "node(s) had 0/1 of the pod's selected GPUs that fit (GPU-0, index 0: in use by other pods, and the pod asks for it whole)",
		},
		{
			name: "too few of the selected GPUs fit",
			node: node(gpu(0), with(gpu(1), unhealthy), gpu(2)),
			req:  selecting(request(app("a", 2, 1000, 10)), "GPU-0", "GPU-1"),
			want: "node(s) had 1/2 of the pod's selected GPUs that fit, 2 needed (GPU-1, index 1: unhealthy)",
			// An unhealthy GPU does not come back when pods end.
			wantUnresolvable: true,
		},
		{
			name:             "none of the selected GPUs on the node",
			node:             node(gpu(0), gpu(1)),
			req:              selecting(request(app("a", 1, 1000, 10)), "GPU-7"),
			want:             "node(s) had none of the pod's selected GPUs",
			wantUnresolvable: true,
		},
		{
			name: "more GPUs than are named",
			node: node(with(gpu(0), unhealthy), with(gpu(1), unhealthy), with(gpu(2), unhealthy), with(gpu(3), unhealthy), with(gpu(4), unhealthy), with(gpu(5), unhealthy)),
			req:  selecting(request(app("a", 1, 1000, 10)), "GPU-0", "GPU-1", "GPU-2", "GPU-3", "GPU-4", "GPU-5"),
			want: "node(s) had 0/6 of the pod's selected GPUs that fit (GPU-0, index 0: unhealthy; GPU-1, index 1: unhealthy; " +
				"GPU-2, index 2: unhealthy; GPU-3, index 3: unhealthy; 2 more)",
			wantUnresolvable: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, failure := Fit(tt.node, tt.req)
			if failure == nil {
				t.Fatal("Fit() fits, want a failure")
			}
			if got := failure.Error(); got != tt.want {
				t.Errorf("Error() = %q\nwant      %q", got, tt.want)
			}
			if failure.Unresolvable != tt.wantUnresolvable {
				t.Errorf("Unresolvable = %v, want %v", failure.Unresolvable, tt.wantUnresolvable)
			}
		})
	}
}
