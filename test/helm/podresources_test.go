package helm

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/deviceplugin/config"
)

// TestDevicePluginPodResources pins how the chart lets the device plugin
// ask the kubelet which pod each Allocate serves: by default the kubelet's
// pod-resources directory is mounted read-only and named in the
// configuration; turned off, or in DRA mode, neither.
func TestDevicePluginPodResources(t *testing.T) {
	const dir, socket = "/var/lib/kubelet/pod-resources", "/var/lib/kubelet/pod-resources/kubelet.sock"
	tests := []struct {
		name       string
		values     map[string]any
		wantSocket string
	}{
		{name: "on by default", values: map[string]any{}, wantSocket: socket},
		{name: "turned off", values: map[string]any{"podResources": false}},
		{name: "not in DRA mode", values: map[string]any{"mode": "dra"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := defaults()
			r.values = map[string]any{"devicePlugin": tt.values}
			objs := r.mustTemplate(t)
			var ds appsv1.DaemonSet
			fromUnstructured(t, findOne(t, objs, "DaemonSet", "-device-plugin"), &ds)
			mounts := ds.Spec.Template.Spec.Containers[0].VolumeMounts
			i := slices.IndexFunc(mounts, func(m corev1.VolumeMount) bool { return m.MountPath == dir })
			switch {
			case tt.wantSocket != "" && (i < 0 || !mounts[i].ReadOnly):
				t.Errorf("want %s mounted read-only, mounts %+v", dir, mounts)
			case tt.wantSocket == "" && i >= 0:
				t.Errorf("%s mounted though the plugin does not ask the kubelet", dir)
			}
			cm := findOne(t, objs, "ConfigMap", "-device-plugin")
			text, _, _ := unstructured.NestedString(cm.Object, "data", "config.yaml")
			cfg := config.Default()
			if err := yaml.UnmarshalStrict([]byte(text), &cfg); err != nil {
				t.Fatalf("the plugin cannot read its configuration: %v\n%s", err, text)
			}
			if cfg.PodResourcesSocket != tt.wantSocket {
				t.Errorf("podResourcesSocket %q, want %q", cfg.PodResourcesSocket, tt.wantSocket)
			}
		})
	}
}
