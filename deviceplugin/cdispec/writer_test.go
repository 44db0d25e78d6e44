package cdispec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/tessera-gpu/tessera/deviceplugin/driver"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/test/framework"
)

func inventory(uuids ...string) gpu.Inventory {
	inv := gpu.Inventory{DriverVersion: "550.54.15"}
	for i, u := range uuids {
		inv.Devices = append(inv.Devices, gpu.Device{UUID: u, Index: i, DeviceNodes: []string{gpu.DeviceNode(i)}})
	}
	return inv
}

func TestWriteGivesTheRuntimeOneDevicePerGPU(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	dir := filepath.Join(t.TempDir(), "cdi")
	w := Writer{Dir: dir}
	if err := w.Write(ctx, inventory("GPU-a", "GPU-b", "MIG-c")); err != nil {
		t.Fatal(err)
	}
	cache := framework.CDIRuntimeView(t, dir)
	if got, want := cache.ListDevices(), []string{"tessera.dev/gpu=GPU-a", "tessera.dev/gpu=GPU-b", "tessera.dev/gpu=MIG-c"}; !slices.Equal(got, want) {
		t.Errorf("devices %v, want %v", got, want)
	}
	for i, name := range []string{DeviceName("GPU-a"), DeviceName("GPU-b"), DeviceName("MIG-c")} {
		dev := cache.GetDevice(name)
		if dev == nil || len(dev.ContainerEdits.DeviceNodes) != 1 || dev.ContainerEdits.DeviceNodes[0].Path != gpu.DeviceNode(i) {
			t.Errorf("device %s = %+v, want its device file %s", name, dev, gpu.DeviceNode(i))
		}
	}
	spec := cache.GetDevice(DeviceName("GPU-a")).GetSpec()
	var control []string
	for _, n := range spec.ContainerEdits.DeviceNodes {
		control = append(control, n.Path)
	}
	if !slices.Equal(control, []string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"}) {
		t.Errorf("control devices %v", control)
	}
	fi, err := os.Stat(w.Path())
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("spec file %v, %v; want it readable by all", fi, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("spec directory holds %d files, want the spec alone (no temporary file left)", len(entries))
	}
}

func TestWriteFollowsDiscoveryAndLeavesAnUnchangedSpecAlone(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	dir := t.TempDir()
	w := Writer{Dir: dir}
	if err := w.Write(ctx, inventory("GPU-a", "GPU-b")); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(w.Path(), old, old); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, inventory("GPU-a", "GPU-b")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(w.Path()); !fi.ModTime().Equal(old) {
		t.Errorf("an unchanged spec was written again at %v", fi.ModTime())
	}
	// GPU-b is gone (a board pulled, or now split into MIG instances).
	if err := w.Write(ctx, inventory("GPU-a", "MIG-x")); err != nil {
		t.Fatal(err)
	}
	if got, want := framework.CDIRuntimeView(t, dir).ListDevices(), []string{"tessera.dev/gpu=GPU-a", "tessera.dev/gpu=MIG-x"}; !slices.Equal(got, want) {
		t.Errorf("devices after rediscovery %v, want %v", got, want)
	}
}

func TestWriteMountsTheDriverFromTheDriverRoot(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	root := t.TempDir()
	lib := filepath.Join(root, "usr/lib64/libcuda.so.550.54.15")
	if err := os.MkdirAll(filepath.Dir(lib), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lib, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w := Writer{Dir: dir, DriverRoot: driver.Root{Path: root, HostPath: "/run/nvidia/driver"}}
	if err := w.Write(ctx, inventory("GPU-a")); err != nil {
		t.Fatal(err)
	}
	mounts := framework.CDIRuntimeView(t, dir).GetDevice(DeviceName("GPU-a")).GetSpec().ContainerEdits.Mounts
	if len(mounts) != 1 || mounts[0].HostPath != "/run/nvidia/driver/usr/lib64/libcuda.so.550.54.15" ||
		mounts[0].ContainerPath != "/usr/lib64/libcuda.so.550.54.15" || !slices.Contains(mounts[0].Options, "ro") {
		t.Errorf("mounts %+v, want libcuda read-only from the host's driver root", mounts)
	}
	// A driver root without this driver's libcuda is an error, not a spec
	// that fails every container at start.
	w.DriverRoot.Path = t.TempDir()
	if err := w.Write(ctx, inventory("GPU-a")); err == nil || !strings.Contains(err.Error(), "libcuda.so.550.54.15") {
		t.Errorf("Write without libcuda: %v, want an error naming it", err)
	}
}

func TestBuildRefusesAUUIDThatIsNoCDIName(t *testing.T) {
	if _, err := Build(inventory("GPU a/b").Devices, nil); err == nil || !strings.Contains(err.Error(), "GPU a/b") {
		t.Errorf("Build: %v, want an error naming the GPU", err)
	}
}
