package plugin

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestDecodeArgs pins which of the extender's fields the plugin takes, and
// that a field it would ignore is refused by name rather than dropped.
func TestDecodeArgs(t *testing.T) {
	raw := func(s string) runtime.Object { return &runtime.Unknown{Raw: []byte(s)} }
	tests := []struct {
		name    string
		obj     runtime.Object
		wantErr []string
		// wantMaxAge is the heartbeat age decoded, when no error is wanted.
		wantMaxAge time.Duration
		// wantMetrics is the metrics address decoded: empty, none served.
		wantMetrics string
	}{
		{name: "no arguments take the defaults", wantMaxAge: 2 * time.Minute},
		{name: "the placement fields are read", obj: raw(`{"heartbeatMaxAge":"30s","defaultNodePolicy":"spread",
			"leaseNamespace":"leases","bindWaitTimeout":"10s","hamiCoreMissing":"Warn","inFlightTTL":"20s","orphanSweepInterval":"1m",
			"defaultGPUPolicy":"binpack","resourceNames":{"count":"nvidia.com/gpu","memory":"nvidia.com/gpumem",
			"memoryPercentage":"nvidia.com/gpumem-percentage","cores":"nvidia.com/gpucores"}}`), wantMaxAge: 30 * time.Second},
		{name: "YAML is read too", obj: raw("heartbeatMaxAge: 1m\n"), wantMaxAge: time.Minute},
		{name: "a field of the extender's server is refused by name", obj: raw(`{"listenAddress":"127.0.0.1:8888"}`),
			wantErr: []string{"field listenAddress: only the extender uses it", "reads only resourceNames"}},
		{name: "every such field is named", obj: raw(`{"heartbeatMaxAge":"1m","clientQPS":5,"enableProfiling":false}`),
			wantErr: []string{"fields clientQPS, enableProfiling: only the extender uses them"}},
		{name: "the metrics listener is read", obj: raw(`{"metricsAddress":":9403","allocationMetrics":true}`),
			wantMaxAge: 2 * time.Minute, wantMetrics: ":9403"},
		{name: "without metricsAddress no metrics are served, not on the extender's default", obj: raw(`{"heartbeatMaxAge":"1m"}`),
			wantMaxAge: time.Minute},
		{name: "a metrics address that is not host:port is refused", obj: raw(`{"metricsAddress":"9403"}`),
			wantErr: []string{`metricsAddress: Invalid value: "9403": must be host:port`}},
		{name: "an unknown field stays unknown", obj: raw(`{"heartbeatMaxAg":"1m"}`),
			wantErr: []string{`unknown field "heartbeatMaxAg"`}},
		{name: "arguments that are not YAML or JSON are refused", obj: &unstructured.Unstructured{}, wantErr: []string{"want arguments as YAML or JSON"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := decodeArgs(tt.obj)
			if len(tt.wantErr) > 0 {
				for _, want := range tt.wantErr {
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Errorf("decodeArgs = %v, want an error saying %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("decodeArgs: %v", err)
			}
			if cfg.HeartbeatMaxAge.Duration != tt.wantMaxAge {
				t.Errorf("heartbeatMaxAge = %s, want %s", cfg.HeartbeatMaxAge.Duration, tt.wantMaxAge)
			}
			if cfg.MetricsAddress != tt.wantMetrics {
				t.Errorf("metricsAddress = %q, want %q", cfg.MetricsAddress, tt.wantMetrics)
			}
		})
	}
}
