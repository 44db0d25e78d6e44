package helm

import (
	"slices"
	"strings"
	"testing"
)

// TestFitGate pins that scheduler.extender.fitGate has the webhook gate
// the GPU pods of the extender-mode profile and the extender lift the
// gate, and that neither happens unless asked for, nor in plugin mode,
// whose tessera-scheduler has a fit gate of its own.
func TestFitGate(t *testing.T) {
	fitGate := map[string]any{"fitGate": true}
	tests := []struct {
		name   string
		values map[string]any
		// wantWebhook are the webhook's --fit-gate-schedulers flags.
		wantWebhook  []string
		wantExtender bool
	}{
		{name: "extender mode", values: map[string]any{"scheduler": map[string]any{"extender": fitGate}},
			wantWebhook: []string{"--fit-gate-schedulers=tessera-scheduler"}, wantExtender: true},
		{name: "extender mode under another scheduler name", values: map[string]any{"schedulerName": "gpu-scheduler", "scheduler": map[string]any{"extender": fitGate}},
			wantWebhook: []string{"--fit-gate-schedulers=gpu-scheduler"}, wantExtender: true},
		{name: "off by default"},
		{name: "plugin mode", values: map[string]any{"scheduler": map[string]any{"mode": "plugin", "extender": fitGate}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := defaults()
			r.values = tt.values
			objs := r.mustTemplate(t)
			var webhook []string
			for _, arg := range containerCommand(t, findOne(t, objs, "Deployment", "-webhook"), "webhook") {
				if strings.HasPrefix(arg, "--fit-gate-schedulers=") {
					webhook = append(webhook, arg)
				}
			}
			if !slices.Equal(webhook, tt.wantWebhook) {
				t.Errorf("webhook flags %q, want %q", webhook, tt.wantWebhook)
			}
			scheduler := findOne(t, objs, "Deployment", "-scheduler")
			extender := false
			for _, c := range podContainers(scheduler) {
				extender = extender || slices.Contains(containerCommand(t, scheduler, c.(map[string]any)["name"].(string)), "--fit-gate=true")
			}
			if extender != tt.wantExtender {
				t.Errorf("the scheduler pod runs --fit-gate=true: %t, want %t", extender, tt.wantExtender)
			}
		})
	}
	bad := defaults()
	bad.values = map[string]any{"scheduler": map[string]any{"extender": map[string]any{"fitGate": "yes"}}}
	if _, err := bad.template(t); err == nil {
		t.Error(`the schema accepts scheduler.extender.fitGate "yes"`)
	}
}
