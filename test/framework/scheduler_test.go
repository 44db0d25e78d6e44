package framework

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestMovePluginMetrics pins that the plugin's metrics listener, and only
// a listener that is asked for, moves to a loopback port of its own.
func TestMovePluginMetrics(t *testing.T) {
	tests := []struct {
		name     string
		args     string
		wantMove bool
	}{
		{name: "a listener on every address moves to loopback", args: `{metricsAddress: ":9403", heartbeatMaxAge: 2m}`, wantMove: true},
		{name: "no listener stays none", args: `{heartbeatMaxAge: 2m}`},
		{name: "a listener turned off stays off", args: `{metricsAddress: ""}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config := map[string]any{}
			doc := "profiles: [{schedulerName: s, pluginConfig: [{name: NodeResourcesFit, args: {metricsAddress: x}}, {name: Tessera, args: " + tt.args + "}]}]"
			if err := yaml.Unmarshal([]byte(doc), &config); err != nil {
				t.Fatal(err)
			}
			addr, err := movePluginMetrics(config)
			if err != nil {
				t.Fatal(err)
			}
			out, _ := yaml.Marshal(config)
			if got := strings.HasPrefix(addr, "127.0.0.1:") && strings.Contains(string(out), "metricsAddress: "+addr); got != tt.wantMove {
				t.Errorf("movePluginMetrics = %q, configuration now:\n%s", addr, out)
			}
			if !tt.wantMove && addr != "" {
				t.Errorf("movePluginMetrics = %q, want no address", addr)
			}
			if !strings.Contains(string(out), "metricsAddress: x") {
				t.Errorf("another plugin's arguments changed:\n%s", out)
			}
		})
	}
}
