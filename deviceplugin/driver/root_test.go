package driver

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

const version = "550.54.15"

// realLibrary returns a shared library of this machine with a soname, to
// stand in for a driver library: zlib, whose soname is libz.so.1.
func realLibrary(t *testing.T) string {
	t.Helper()
	for _, pattern := range []string{"/usr/lib/*/libz.so.1", "/lib/*/libz.so.1", "/usr/lib64/libz.so.1", "/lib64/libz.so.1"} {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			return m[0]
		}
	}
	t.Fatal("no libz.so.1 on this machine to stand in for a driver library")
	return ""
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// fakeDriver lays out a driver as the GPU operator's container does, with
// an absolute link as distributions make them.
func fakeDriver(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	lib := realLibrary(t)
	libDir := filepath.Join(root, "usr/lib/x86_64-linux-gnu")
	copyFile(t, lib, filepath.Join(libDir, "libcuda.so."+version))
	copyFile(t, lib, filepath.Join(libDir, "libnvidia-ml.so."+version))
	if err := os.Symlink("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so."+version, filepath.Join(libDir, "libnvidia-ml.so.1")); err != nil {
		t.Fatal(err)
	}
	// Another version's library is not this driver's.
	copyFile(t, lib, filepath.Join(libDir, "libnvidia-ptxjitcompiler.so.535.1"))
	copyFile(t, lib, filepath.Join(root, "usr/bin/nvidia-smi"))
	return root
}

func TestNVMLLibraryFollowsLinksInsideTheRoot(t *testing.T) {
	root := fakeDriver(t)
	got, err := Root{Path: root}.NVMLLibrary()
	if want := filepath.Join(root, "usr/lib/x86_64-linux-gnu/libnvidia-ml.so."+version); err != nil || got != want {
		t.Errorf("NVMLLibrary = %q, %v; want %q", got, err, want)
	}
	_, err = Root{Path: t.TempDir()}.NVMLLibrary()
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("NVMLLibrary of an empty root: %v, want ErrNotFound", err)
	}
}

func TestFilesMountsTheDriversLibrariesUnderTheirHostPaths(t *testing.T) {
	root := fakeDriver(t)
	files, err := Root{Path: root, HostPath: "/run/nvidia/driver"}.Files(version)
	if err != nil {
		t.Fatal(err)
	}
	want := []File{
		{HostPath: "/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libcuda.so." + version, ContainerPath: "/usr/lib/x86_64-linux-gnu/libcuda.so." + version},
		// The library's soname, read from its ELF header.
		{HostPath: "/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libcuda.so." + version, ContainerPath: "/usr/lib/x86_64-linux-gnu/libz.so.1"},
		{HostPath: "/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so." + version, ContainerPath: "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so." + version},
		{HostPath: "/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so." + version, ContainerPath: "/usr/lib/x86_64-linux-gnu/libz.so.1"},
		{HostPath: "/run/nvidia/driver/usr/bin/nvidia-smi", ContainerPath: "/usr/bin/nvidia-smi"},
	}
	if !reflect.DeepEqual(files, want) {
		t.Errorf("Files =\n%+v\nwant\n%+v", files, want)
	}
	if _, err := (Root{Path: root, HostPath: "/"}).Files("999.1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Files of a version that is not installed: %v, want ErrNotFound naming libcuda", err)
	}
}
