package helm

import (
	"slices"
	"testing"
)

// TestWebhookModeFollowsTheDevicePlugin pins what the webhook makes of GPU
// pods: claims where the nodes serve DRA, unless webhook.mode says
// otherwise, and the extender's normalisation everywhere else.
func TestWebhookModeFollowsTheDevicePlugin(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{name: "device-plugin nodes", want: "--mode=extender"},
		{name: "DRA nodes", values: map[string]any{"devicePlugin": map[string]any{"mode": "dra"}}, want: "--mode=dra"},
		{name: "set against the nodes", values: map[string]any{"devicePlugin": map[string]any{"mode": "dra"}, "webhook": map[string]any{"mode": "extender"}}, want: "--mode=extender"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := render{release: "t", namespace: "tessera-system", values: tc.values}.mustTemplate(t)
			command := containerCommand(t, findOne(t, objs, "Deployment", "-webhook"), "webhook")
			if !slices.Contains(command, tc.want) {
				t.Errorf("webhook command %v lacks %s", command, tc.want)
			}
		})
	}
	if _, err := (render{release: "t", namespace: "tessera-system", values: map[string]any{"webhook": map[string]any{"mode": "DRA"}}}).template(t); err == nil {
		t.Error("the schema accepts webhook.mode DRA")
	}
}
