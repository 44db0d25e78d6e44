package nodestatus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

func TestCheckHAMiCore(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libvgpu.so")
	if err := os.WriteFile(lib, []byte("\x7fELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.so")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		path   string
		ready  bool
		reason string
		says   string
	}{
		{name: "the library is there", path: lib, ready: true, reason: gpuv1alpha1.HAMiCoreInstalled, says: lib},
		{name: "configured but missing names the path and the chart value", path: filepath.Join(dir, "absent.so"), reason: gpuv1alpha1.HAMiCoreLibraryMissing, says: "absent.so is not on the node"},
		{name: "an empty file is no library", path: empty, reason: gpuv1alpha1.HAMiCoreLibraryMissing, says: "is not a library file"},
		{name: "a directory is no library", path: dir, reason: gpuv1alpha1.HAMiCoreLibraryMissing, says: "is not a library file"},
		{name: "none configured", path: "", reason: gpuv1alpha1.HAMiCoreNotConfigured, says: "not enforced"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckHAMiCore(tt.path)
			if got.Ready != tt.ready || got.Reason != tt.reason || !strings.Contains(got.Message, tt.says) {
				t.Errorf("CheckHAMiCore(%q) = %+v, want ready %v reason %s saying %q", tt.path, got, tt.ready, tt.reason, tt.says)
			}
		})
	}
}
