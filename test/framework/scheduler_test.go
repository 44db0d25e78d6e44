package framework

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestMovePluginMetrics pins that the plugin's metrics listener, and only
// a listener that is asked for, moves to a loopback port of its own.
func TestMovePluginMetrics(t *testing.T) {
	// The Tessera plugin's arguments, and whether its listener moves.
	moves := map[string]bool{
		`{metricsAddress: ":9403", heartbeatMaxAge: 2m}`: true,  // every address: to loopback
		`{heartbeatMaxAge: 2m}`:                          false, // no listener stays none
		`{metricsAddress: ""}`:                           false, // a listener turned off stays off
	}
	for args, wantMove := range moves {
		t.Run(args, func(t *testing.T) {
			config := map[string]any{}
			doc := "profiles: [{schedulerName: s, pluginConfig: [{name: NodeResourcesFit, args: {metricsAddress: x}}, {name: Tessera, args: " + args + "}]}]"
			if err := yaml.Unmarshal([]byte(doc), &config); err != nil {
				t.Fatal(err)
			}
			addr, err := movePluginMetrics(config)
			if err != nil {
				t.Fatal(err)
			}
			out, _ := yaml.Marshal(config)
			if moved := strings.HasPrefix(addr, "127.0.0.1:") && strings.Contains(string(out), "metricsAddress: "+addr); moved != wantMove {
				t.Errorf("movePluginMetrics = %q, configuration now:\n%s", addr, out)
			}
			if !wantMove && addr != "" {
				t.Errorf("movePluginMetrics = %q, want no address", addr)
			}
			if !strings.Contains(string(out), "metricsAddress: x") {
				t.Errorf("another plugin's arguments changed:\n%s", out)
			}
		})
	}
}
