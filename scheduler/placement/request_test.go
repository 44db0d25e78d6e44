package placement

import (
	"reflect"
	"strings"
	"testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

func TestNewRequest(t *testing.T) {
	ok := app("a", 1, 1000, 10)
	change := func(f func(*gpurequest.ContainerRequest)) []gpurequest.ContainerRequest {
		c := ok
		f(&c)
		return []gpurequest.ContainerRequest{c}
	}
	tests := []struct {
		name          string
		containers    []gpurequest.ContainerRequest
		sel           gpurequest.Selection
		defaultPolicy gpurequest.Policy
		wantPolicy    gpurequest.Policy
		wantErr       string
	}{
		{name: "the default GPU policy applies when the pod sets none", containers: change(func(*gpurequest.ContainerRequest) {}), defaultPolicy: gpurequest.Spread, wantPolicy: gpurequest.Spread},
		{name: "the pod's GPU policy wins over the default", containers: change(func(*gpurequest.ContainerRequest) {}), sel: gpurequest.Selection{GPUPolicy: gpurequest.Binpack}, defaultPolicy: gpurequest.Spread, wantPolicy: gpurequest.Binpack},
		{name: "an unknown policy is refused", containers: change(func(*gpurequest.ContainerRequest) {}), defaultPolicy: "fill", wantErr: `GPU policy: unknown policy "fill"`},
		{name: "count below 1 is refused", containers: change(func(c *gpurequest.ContainerRequest) { c.Count = 0 }), defaultPolicy: gpurequest.Spread, wantErr: "containers[0].count: Invalid value: 0: must be between 1 and 64"},
		{name: "count over 64 is refused", containers: change(func(c *gpurequest.ContainerRequest) { c.Count = 65 }), defaultPolicy: gpurequest.Spread, wantErr: "containers[0].count: Invalid value: 65: must be between 1 and 64"},
		{name: "negative memory is refused", containers: change(func(c *gpurequest.ContainerRequest) { c.MemoryMiB = -1 }), defaultPolicy: gpurequest.Spread, wantErr: "containers[0].memoryMiB: Invalid value: -1"},
		{name: "percentage over 100 is refused", containers: change(func(c *gpurequest.ContainerRequest) { c.MemoryMiB, c.MemoryPercent = 0, 101 }), defaultPolicy: gpurequest.Spread, wantErr: "containers[0].memoryPercent: Invalid value: 101: must be between 0 and 100"},
		{name: "memory and percentage together are refused", containers: change(func(c *gpurequest.ContainerRequest) { c.MemoryPercent = 10 }), defaultPolicy: gpurequest.Spread, wantErr: "containers[0].memoryPercent: Forbidden"},
		{name: "cores over 100 are refused", containers: change(func(c *gpurequest.ContainerRequest) { c.Cores = 101 }), defaultPolicy: gpurequest.Spread, wantErr: "containers[0].cores: Invalid value: 101: must be between 0 and 100"},
		{name: "an unknown kind is refused", containers: change(func(c *gpurequest.ContainerRequest) { c.Kind = "Ephemeral" }), defaultPolicy: gpurequest.Spread, wantErr: `containers[0].kind: Unsupported value: "Ephemeral"`},
		{name: "more than 64 containers are refused", containers: make65(ok), defaultPolicy: gpurequest.Spread, wantErr: "containers: Too many: 65: must have at most 64 items"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewRequest(tt.containers, tt.sel, tt.defaultPolicy)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("NewRequest() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewRequest() error = %v", err)
			}
			if got.GPUPolicy != tt.wantPolicy {
				t.Errorf("GPUPolicy = %q, want %q", got.GPUPolicy, tt.wantPolicy)
			}
		})
	}
}

func TestNewRequestLowerCasesTypesWithoutChangingItsArgument(t *testing.T) {
	sel := gpurequest.Selection{Types: []string{"A100"}, ExcludeTypes: []string{"T4"}}
	req, err := NewRequest([]gpurequest.ContainerRequest{app("a", 1, 1000, 10)}, sel, gpurequest.Spread)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(req.Selection.Types, []string{"a100"}) || !reflect.DeepEqual(req.Selection.ExcludeTypes, []string{"t4"}) {
		t.Errorf("types = %v, %v, want lower case", req.Selection.Types, req.Selection.ExcludeTypes)
	}
	if sel.Types[0] != "A100" || sel.ExcludeTypes[0] != "T4" {
		t.Errorf("argument changed to %v, %v", sel.Types, sel.ExcludeTypes)
	}
	if req.Containers[0].Kind != gpuv1alpha1.ContainerApp {
		t.Errorf("containers not kept: %+v", req.Containers)
	}
}

func make65(c gpurequest.ContainerRequest) []gpurequest.ContainerRequest {
	out := make([]gpurequest.ContainerRequest, MaxContainers+1)
	for i := range out {
		out[i] = c
	}
	return out
}
