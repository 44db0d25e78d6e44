package placement

import "testing"

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
			want:    "0/8 GPUs fit: 5 not enough memory, 3 share limit reached",
		},
		{
			name:    "equal counts keep the order of the rules",
			failure: Failure{Total: 4, Counts: counts(ReasonCores, 2, ReasonUnhealthy, 2), Detail: DetailTooFew, Needed: 1},
			want:    "0/4 GPUs fit: 2 unhealthy, 2 not enough cores",
		},
		{
			name:    "some GPUs fit but too few",
			failure: Failure{Total: 8, Fit: 2, Counts: counts(ReasonNUMA, 6), Detail: DetailTooFew, Needed: 4},
			want:    "2/8 GPUs fit, 4 needed: 6 too few on one NUMA node",
		},
		{
			name:    "containers that do not fit together",
			failure: Failure{Total: 2, Fit: 2, Detail: DetailTogether},
			want:    "2/2 GPUs fit; the pod's containers do not fit together",
		},
		{
			name:    "search limit",
			failure: Failure{Total: 2, Fit: 2, Detail: DetailSearchLimit},
			want:    "2/2 GPUs fit; the search for a placement gave up",
		},
		{
			name:    "too many devices",
			failure: Failure{Total: 65, Detail: DetailTooManyDevices},
			want:    "node has 65 GPUs, placement handles at most 64",
		},
		{
			name:    "invalid request",
			failure: Failure{Detail: DetailInvalidRequest},
			want:    "pod's GPU request is out of placement's limits",
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
