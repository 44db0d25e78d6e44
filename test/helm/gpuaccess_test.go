package helm

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/deviceplugin/config"
)

// TestDevicePluginGPUAccess pins how the plugin itself reaches the GPUs and
// how its containers' GPUs reach the runtime, for each way the chart offers.
func TestDevicePluginGPUAccess(t *testing.T) {
	tests := []struct {
		name         string
		values       map[string]any
		wantEnvVar   bool
		privileged   bool
		wantMounts   []string
		wantStrategy string
		wantConfig   []string
	}{
		{
			name:         "defaults ask the toolkit for every GPU",
			values:       map[string]any{},
			wantEnvVar:   true,
			wantStrategy: config.StrategyEnvVar,
		},
		{
			name:         "volume mounts",
			values:       map[string]any{"deviceListStrategy": "volume-mounts", "driverRoot": "/"},
			privileged:   true,
			wantMounts:   []string{"/driver-root"},
			wantStrategy: config.StrategyVolumeMounts,
			wantConfig:   []string{"driverRoot: /driver-root", "hostDriverRoot: /"},
		},
		{
			name:         "cdi with the GPU operator's driver writes the spec to the host's CDI directory",
			values:       map[string]any{"deviceListStrategy": "cdi", "driverRoot": "/run/nvidia/driver"},
			privileged:   true,
			wantMounts:   []string{"/driver-root", "/var/run/cdi"},
			wantStrategy: config.StrategyCDI,
			wantConfig:   []string{"cdiSpecDir: /var/run/cdi", "hostDriverRoot: /run/nvidia/driver"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := defaults()
			r.values = map[string]any{"devicePlugin": tt.values}
			objs := r.mustTemplate(t)
			var ds appsv1.DaemonSet
			fromUnstructured(t, findOne(t, objs, "DaemonSet", "-device-plugin"), &ds)
			c := ds.Spec.Template.Spec.Containers[0]
			hasEnv := slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "NVIDIA_VISIBLE_DEVICES" })
			if hasEnv != tt.wantEnvVar {
				t.Errorf("NVIDIA_VISIBLE_DEVICES set: %v, want %v", hasEnv, tt.wantEnvVar)
			}
			privileged := c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
			if privileged != tt.privileged {
				t.Errorf("privileged %v, want %v", privileged, tt.privileged)
			}
			for _, want := range tt.wantMounts {
				if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == want }) {
					t.Errorf("no mount at %s in %+v", want, c.VolumeMounts)
				}
			}
			cm := findOne(t, objs, "ConfigMap", "-device-plugin")
			text, _, _ := unstructured.NestedString(cm.Object, "data", "config.yaml")
			var cfg config.Configuration
			if err := yaml.UnmarshalStrict([]byte(text), &cfg); err != nil {
				t.Fatalf("the plugin cannot read its configuration: %v\n%s", err, text)
			}
			if cfg.DeviceListStrategy != tt.wantStrategy {
				t.Errorf("deviceListStrategy %q, want %q", cfg.DeviceListStrategy, tt.wantStrategy)
			}
			for _, want := range tt.wantConfig {
				if !strings.Contains(text, want) {
					t.Errorf("configuration lacks %q:\n%s", want, text)
				}
			}
		})
	}
}
