package scaledra

import (
	"testing"

	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

// TestOnlyLeases pins what counts as settled DRA node daemons: Lease reads
// and renewals only.
func TestOnlyLeases(t *testing.T) {
	for _, tt := range []struct {
		kinds map[string]int
		want  bool
	}{
		{map[string]int{"put leases": 40, "get leases": 3}, true},
		{map[string]int{}, true},
		{map[string]int{"put leases": 40, "delete resourceslices": 1}, false},
		{map[string]int{"get nodes": 2}, false},
		{map[string]int{"watch resourceslices": 1, "put leases": 9}, false},
	} {
		if got := onlyLeases(meter.RequestCount{ByKind: tt.kinds}); got != tt.want {
			t.Errorf("onlyLeases(%v) = %v, want %v", tt.kinds, got, tt.want)
		}
	}
}
