package helm

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestHAMiCoreImage pins that naming HAMi-core's image is all it takes: an
// init container copies the library to the host path the plugin is
// configured with and mounts, and the extender gets its policy.
func TestHAMiCoreImage(t *testing.T) {
	r := defaults()
	r.values = map[string]any{
		"devicePlugin": map[string]any{"hamiCore": map[string]any{"image": "projecthami/hami:v2.6.0"}},
		"scheduler":    map[string]any{"extender": map[string]any{"hamiCoreMissing": "Warn"}},
	}
	objs := r.mustTemplate(t)
	var ds appsv1.DaemonSet
	fromUnstructured(t, findOne(t, objs, "DaemonSet", "-device-plugin"), &ds)
	spec := ds.Spec.Template.Spec
	if len(spec.InitContainers) != 1 {
		t.Fatalf("init containers %+v, want the HAMi-core copy", spec.InitContainers)
	}
	init := spec.InitContainers[0]
	const lib = "/usr/local/vgpu/libvgpu.so"
	if init.Image != "projecthami/hami:v2.6.0" || !slices.Contains(init.Command, "/k8s-vgpu/lib/nvidia/libvgpu.so") || !slices.Contains(init.Command, lib) {
		t.Errorf("init container %s %v, want a copy of the image's library to %s", init.Image, init.Command, lib)
	}
	mounted := func(mounts []string) bool { return slices.Contains(mounts, "library:/usr/local/vgpu") }
	var initMounts, pluginMounts []string
	for _, m := range init.VolumeMounts {
		initMounts = append(initMounts, m.Name+":"+m.MountPath)
	}
	for _, m := range spec.Containers[0].VolumeMounts {
		pluginMounts = append(pluginMounts, m.Name+":"+m.MountPath)
	}
	if !mounted(initMounts) || !mounted(pluginMounts) {
		t.Errorf("the library's host directory is mounted in the init container %v and the plugin %v, want both", initMounts, pluginMounts)
	}
	cm := findOne(t, objs, "ConfigMap", "-device-plugin")
	text, _, _ := unstructured.NestedString(cm.Object, "data", "config.yaml")
	if !strings.Contains(text, "libraryPath: "+lib) {
		t.Errorf("the plugin's configuration lacks libraryPath %s:\n%s", lib, text)
	}
	scheduler := findOne(t, objs, "Deployment", "-scheduler")
	if cmd := containerCommand(t, scheduler, "extender"); !slices.Contains(cmd, "--hami-core-missing=Warn") {
		t.Errorf("extender command %v, want --hami-core-missing=Warn", cmd)
	}

	// Without the image, no init container.
	objs = defaults().mustTemplate(t)
	fromUnstructured(t, findOne(t, objs, "DaemonSet", "-device-plugin"), &ds)
	if n := len(ds.Spec.Template.Spec.InitContainers); n != 0 {
		t.Errorf("%d init containers without hamiCore.image", n)
	}
}
