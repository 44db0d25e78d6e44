package simulated

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

// DriverVersion is the driver version published for simulated GPUs.
const DriverVersion = "simulated"

// maxGPUs is the most GPUs a GPUNode can list.
const maxGPUs = 64

// File is the simulated-GPU file: YAML or JSON.
//
//	gpus:
//	- uuid: GPU-sim-node1-0
//	  model: NVIDIA A100-SXM4-40GB
//	  memoryMiB: 40960
//	  numaNode: 0          # optional, -1 (unknown) when absent
//	  index: 0             # optional, the position in the list when absent
//	  health: Unhealthy    # optional, Healthy when absent
//	  healthMessage: XID 79
type File struct {
	// GPUs are the node's simulated GPUs.
	GPUs []FileGPU `json:"gpus"`
}

// FileGPU is one simulated GPU.
type FileGPU struct {
	// UUID identifies the GPU; required and unique.
	UUID string `json:"uuid"`
	// Index is the GPU's index on the node; its position when absent.
	Index *int `json:"index,omitempty"`
	// Model is the product name; required.
	Model string `json:"model"`
	// MemoryMiB is the GPU's memory; greater than 0.
	MemoryMiB int64 `json:"memoryMiB"`
	// NUMANode is the GPU's NUMA node; -1 (unknown) when absent.
	NUMANode *int `json:"numaNode,omitempty"`
	// Health is Healthy or Unhealthy.
	Health gpuv1alpha1.GPUHealth `json:"health,omitempty"`
	// HealthMessage says why an unhealthy GPU is unhealthy.
	HealthMessage string `json:"healthMessage,omitempty"`
	// MemoryUsedMiB and UtilizationPercent are reported as the GPU's
	// measured use.
	MemoryUsedMiB int64 `json:"memoryUsedMiB,omitempty"`
	// UtilizationPercent is between 0 and 100.
	UtilizationPercent int32 `json:"utilizationPercent,omitempty"`
}

// ReadFile reads and checks a simulated-GPU file. The error names the file,
// and for bad content the field and what it accepts.
func ReadFile(path string) (File, error) {
	var f File
	data, err := os.ReadFile(path)
	if err != nil {
		return f, fmt.Errorf("reading simulated GPU file: %w", err)
	}
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return f, fmt.Errorf("simulated GPU file %s: %w", path, err)
	}
	if err := f.Validate(); err != nil {
		return f, fmt.Errorf("simulated GPU file %s: %w", path, err)
	}
	return f, nil
}

// Validate returns every invalid field of the file.
func (f *File) Validate() error {
	var errs field.ErrorList
	gpusPath := field.NewPath("gpus")
	switch {
	case len(f.GPUs) == 0:
		errs = append(errs, field.Required(gpusPath, "must list at least one GPU"))
	case len(f.GPUs) > maxGPUs:
		errs = append(errs, field.TooMany(gpusPath, len(f.GPUs), maxGPUs))
	}
	uuids := map[string]bool{}
	indexes := map[int]bool{}
	for i, g := range f.GPUs {
		p := gpusPath.Index(i)
		switch {
		case g.UUID == "":
			errs = append(errs, field.Required(p.Child("uuid"), "every GPU needs a unique UUID"))
		case len(g.UUID) > 128:
			errs = append(errs, field.TooLong(p.Child("uuid"), g.UUID, 128))
		case uuids[g.UUID]:
			errs = append(errs, field.Duplicate(p.Child("uuid"), g.UUID))
		}
		uuids[g.UUID] = true
		switch {
		case g.Model == "":
			errs = append(errs, field.Required(p.Child("model"), "the GPU's product name, such as NVIDIA A100-SXM4-40GB"))
		case len(g.Model) > 128:
			errs = append(errs, field.TooLong(p.Child("model"), g.Model, 128))
		}
		if g.MemoryMiB <= 0 {
			errs = append(errs, field.Invalid(p.Child("memoryMiB"), g.MemoryMiB, "must be greater than 0"))
		}
		index := g.index(i)
		switch {
		case index < 0:
			errs = append(errs, field.Invalid(p.Child("index"), index, "must be 0 or greater"))
		case indexes[index]:
			errs = append(errs, field.Duplicate(p.Child("index"), index))
		}
		indexes[index] = true
		if g.NUMANode != nil && *g.NUMANode < -1 {
			errs = append(errs, field.Invalid(p.Child("numaNode"), *g.NUMANode, "must be -1 (unknown) or greater"))
		}
		switch g.Health {
		case "", gpuv1alpha1.GPUHealthy, gpuv1alpha1.GPUUnhealthy:
		default:
			errs = append(errs, field.NotSupported(p.Child("health"), g.Health, []gpuv1alpha1.GPUHealth{gpuv1alpha1.GPUHealthy, gpuv1alpha1.GPUUnhealthy}))
		}
		if g.MemoryUsedMiB < 0 || g.MemoryUsedMiB > g.MemoryMiB {
			errs = append(errs, field.Invalid(p.Child("memoryUsedMiB"), g.MemoryUsedMiB, "must be between 0 and memoryMiB"))
		}
		if g.UtilizationPercent < 0 || g.UtilizationPercent > 100 {
			errs = append(errs, field.Invalid(p.Child("utilizationPercent"), g.UtilizationPercent, "must be between 0 and 100"))
		}
	}
	return errs.ToAggregate()
}

func (g *FileGPU) index(position int) int {
	if g.Index != nil {
		return *g.Index
	}
	return position
}

// Devices returns the file's GPUs as the plugin sees them.
func (f *File) Devices() []gpu.Device {
	devices := make([]gpu.Device, 0, len(f.GPUs))
	for i, g := range f.GPUs {
		numa := -1
		if g.NUMANode != nil {
			numa = *g.NUMANode
		}
		health := gpu.Healthy()
		if g.Health == gpuv1alpha1.GPUUnhealthy {
			msg := g.HealthMessage
			if msg == "" {
				msg = "marked unhealthy in the simulated GPU file"
			}
			health = gpu.Unhealthy(msg)
		}
		devices = append(devices, gpu.Device{
			UUID:      g.UUID,
			Index:     g.index(i),
			Model:     g.Model,
			MemoryMiB: g.MemoryMiB,
			NUMANode:  numa,
			Health:    health,
			// A real GPU's minor number is its index but for rare
			// cases: good enough for a simulated one.
			DeviceNodes: []string{gpu.DeviceNode(g.index(i))},
		})
	}
	return devices
}
