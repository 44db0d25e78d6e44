package helm

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/deviceplugin/config"
)

// TestDevicePluginPeriods pins that the chart hands the device plugin its
// heartbeat and rescan periods, and that its defaults are the plugin's own.
func TestDevicePluginPeriods(t *testing.T) {
	tests := []struct {
		name                string
		values              map[string]any
		heartbeat, rescanAt time.Duration
	}{
		{name: "defaults", values: map[string]any{}, heartbeat: config.DefaultHeartbeatPeriod, rescanAt: config.DefaultRescanPeriod},
		{name: "set", values: map[string]any{"heartbeatPeriod": "20s", "rescanPeriod": "2m"}, heartbeat: 20 * time.Second, rescanAt: 2 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := defaults()
			r.values = map[string]any{"devicePlugin": tt.values}
			cm := findOne(t, r.mustTemplate(t), "ConfigMap", "-device-plugin")
			text, _, _ := unstructured.NestedString(cm.Object, "data", "config.yaml")
			var cfg config.Configuration
			if err := yaml.UnmarshalStrict([]byte(text), &cfg); err != nil {
				t.Fatalf("the plugin cannot read its configuration: %v\n%s", err, text)
			}
			if cfg.HeartbeatPeriod.Duration != tt.heartbeat || cfg.RescanPeriod.Duration != tt.rescanAt {
				t.Errorf("heartbeatPeriod %v and rescanPeriod %v, want %v and %v:\n%s",
					cfg.HeartbeatPeriod.Duration, cfg.RescanPeriod.Duration, tt.heartbeat, tt.rescanAt, text)
			}
		})
	}
}

// TestDevicePluginDynamicMIG pins that devicePlugin.dynamicMIG reaches the
// plugin's configuration, off by default.
func TestDevicePluginDynamicMIG(t *testing.T) {
	for _, want := range []bool{false, true} {
		r := defaults()
		if want {
			r.values = map[string]any{"devicePlugin": map[string]any{"dynamicMIG": true}}
		}
		cm := findOne(t, r.mustTemplate(t), "ConfigMap", "-device-plugin")
		text, _, _ := unstructured.NestedString(cm.Object, "data", "config.yaml")
		var cfg config.Configuration
		if err := yaml.UnmarshalStrict([]byte(text), &cfg); err != nil {
			t.Fatalf("the plugin cannot read its configuration: %v\n%s", err, text)
		}
		if cfg.DynamicMIG != want {
			t.Errorf("dynamicMIG %v, want %v:\n%s", cfg.DynamicMIG, want, text)
		}
	}
}
