package cdispec

import (
	"fmt"
	"slices"

	"tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"
	cdispecs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/tessera-gpu/tessera/deviceplugin/driver"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

// Vendor and Class make the kind of Tessera's CDI devices, tessera.dev/gpu.
const (
	Vendor = "tessera.dev"
	Class  = "gpu"
)

// controlDevices are the driver's devices every CUDA program opens.
var controlDevices = []string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"}

// mountOptions keep the driver's files read-only and inert in the container.
var mountOptions = []string{"ro", "nosuid", "nodev", "bind"}

// DeviceName returns the qualified CDI name of a GPU, such as
// tessera.dev/gpu=GPU-8f3c....
func DeviceName(uuid string) string {
	return parser.QualifiedName(Vendor, Class, uuid)
}

// Build returns the spec of the GPUs: one device per GPU, named by its
// UUID, with its device files, and for all of them the control devices and
// the driver files.
func Build(devices []gpu.Device, files []driver.File) (*cdispecs.Spec, error) {
	spec := &cdispecs.Spec{Kind: Vendor + "/" + Class}
	for _, d := range devices {
		if err := parser.ValidateDeviceName(d.UUID); err != nil {
			return nil, fmt.Errorf("GPU %s cannot be a CDI device: %w", d.UUID, err)
		}
		dev := cdispecs.Device{Name: d.UUID}
		for _, path := range d.DeviceNodes {
			dev.ContainerEdits.DeviceNodes = append(dev.ContainerEdits.DeviceNodes, &cdispecs.DeviceNode{Path: path})
		}
		spec.Devices = append(spec.Devices, dev)
	}
	slices.SortFunc(spec.Devices, func(a, b cdispecs.Device) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	for _, path := range controlDevices {
		spec.ContainerEdits.DeviceNodes = append(spec.ContainerEdits.DeviceNodes, &cdispecs.DeviceNode{Path: path})
	}
	for _, f := range files {
		spec.ContainerEdits.Mounts = append(spec.ContainerEdits.Mounts, &cdispecs.Mount{
			HostPath: f.HostPath, ContainerPath: f.ContainerPath, Options: slices.Clone(mountOptions),
		})
	}
	version, err := cdi.MinimumRequiredVersion(spec)
	if err != nil {
		return nil, fmt.Errorf("choosing the CDI spec version: %w", err)
	}
	spec.Version = version
	return spec, nil
}
