package meter

import (
	"net/http/httptest"
	"testing"
)

func TestRequestKind(t *testing.T) {
	tests := []struct {
		name, method, url, want string
	}{
		{name: "a namespaced update", method: "PUT", url: "/apis/coordination.k8s.io/v1/namespaces/gpu-node-lease/leases/n1", want: "put leases"},
		{name: "a cluster-scoped watch", method: "GET", url: "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=x&watch=true", want: "watch resourceslices"},
		{name: "a core get", method: "GET", url: "/api/v1/nodes/n1", want: "get nodes"},
		{name: "a subresource", method: "PUT", url: "/api/v1/namespaces/bench/pods/p/status", want: "put pods/status"},
		{name: "a namespaced list", method: "GET", url: "/api/v1/namespaces/bench/pods", want: "get pods"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := requestKind(httptest.NewRequest(tt.method, tt.url, nil)); got != tt.want {
				t.Errorf("requestKind = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRequestTallySince(t *testing.T) {
	tally := NewRequestTally()
	tally.Add(httptest.NewRequest("PUT", "/api/v1/nodes/a", nil))
	before := tally.Count()
	tally.Add(httptest.NewRequest("PUT", "/api/v1/nodes/a", nil))
	tally.Add(httptest.NewRequest("GET", "/api/v1/nodes/a", nil))
	got := tally.Count().Since(before)
	if got.Total != 2 || got.ByKind["put nodes"] != 1 || got.ByKind["get nodes"] != 1 || tally.Load() != 3 {
		t.Errorf("since = %+v, load %d; want 2 requests, one put and one get, of 3", got, tally.Load())
	}
}
