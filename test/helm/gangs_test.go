package helm

import (
	"slices"
	"testing"
)

// TestGangs pins that scheduler.gangs turns on tessera-scheduler's
// GenericWorkload feature gate in plugin mode, with
// TopologyAwareWorkloadScheduling, under which Tessera places a gang as a
// whole, and that the gates are off unless asked for.
func TestGangs(t *testing.T) {
	const gate = "--feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true"
	tests := []struct {
		name   string
		values map[string]any
		want   bool
	}{
		{name: "plugin mode with gangs", values: map[string]any{"mode": "plugin", "gangs": true}, want: true},
		{name: "plugin mode without gangs", values: map[string]any{"mode": "plugin"}},
		{name: "extender mode", values: map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := defaults()
			r.values = map[string]any{"scheduler": tt.values}
			command := containerCommand(t, findOne(t, r.mustTemplate(t), "Deployment", "-scheduler"), "kube-scheduler")
			if got := slices.Contains(command, gate); got != tt.want {
				t.Errorf("kube-scheduler command %v has %s: %t, want %t", command, gate, got, tt.want)
			}
		})
	}
}
