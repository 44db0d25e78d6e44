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

// maxCapabilityError leaves room in the GPUNode's 1024-character message
// for the file and what the problem means.
const maxCapabilityError = 512

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
//	  migInstances:        # optional: the GPU is in MIG mode, and these
//	  - uuid: MIG-sim-0-1  # instances, not the GPU, are the devices
//	    profile: 1g.10gb
//	    memoryMiB: 9856
//	    gpuInstanceID: 7     # optional
//	    computeInstanceID: 0 # optional
//	    computePercent: 14   # optional
//	    capabilityError: permission denied # optional: the instance's
//	                         # capability devices cannot be read
//	  migGeometry:         # optional, instead of migInstances: the GPU is
//	    profiles:          # in MIG mode, its instances made on demand
//	    - name: 1g.10gb
//	      profileID: 19
//	      memoryMiB: 9856
//	      computePercent: 14
//	      placements: [{start: 0, size: 1}, {start: 1, size: 1}]
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
	// MIGInstances, when set, put the GPU in MIG mode: the instances are
	// its devices.
	MIGInstances []FileMIGInstance `json:"migInstances,omitempty"`
	// MIGGeometry, when set, puts the GPU in MIG mode with no instances:
	// a daemon with dynamicMIG serves it whole and makes its instances
	// on demand, kept in the instances file beside this one
	// (InstancesFile); any other serves nothing of it.
	MIGGeometry *gpuv1alpha1.MIGGeometry `json:"migGeometry,omitempty"`
}

// FileMIGInstance is one MIG instance of a simulated GPU.
type FileMIGInstance struct {
	// UUID identifies the instance; required and unique on the node.
	UUID string `json:"uuid"`
	// Profile is the MIG profile, such as 1g.10gb; required.
	Profile string `json:"profile"`
	// MemoryMiB is the instance's memory; greater than 0 and at most its
	// GPU's.
	MemoryMiB int64 `json:"memoryMiB"`
	// GPUInstanceID and ComputeInstanceID identify it on its GPU.
	GPUInstanceID int `json:"gpuInstanceID,omitempty"`
	// ComputeInstanceID identifies the compute instance.
	ComputeInstanceID int `json:"computeInstanceID,omitempty"`
	// ComputePercent is its share of the GPU's compute, 0 to 100.
	ComputePercent int `json:"computePercent,omitempty"`
	// CapabilityError, when set, plays a driver table of MIG capability
	// devices that cannot be read or lacks the instance: the reason the
	// plugin reports, as it does for NVML.
	CapabilityError string `json:"capabilityError,omitempty"`
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
		errs = append(errs, uniqueUUID(p.Child("uuid"), g.UUID, uuids)...)
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
		errs = append(errs, validateGeometry(p.Child("migGeometry"), g.MIGGeometry, len(g.MIGInstances) > 0)...)
		for j, m := range g.MIGInstances {
			mp := p.Child("migInstances").Index(j)
			errs = append(errs, uniqueUUID(mp.Child("uuid"), m.UUID, uuids)...)
			switch {
			case m.Profile == "":
				errs = append(errs, field.Required(mp.Child("profile"), "the MIG profile, such as 1g.10gb"))
			case len(m.Profile) > 64:
				errs = append(errs, field.TooLong(mp.Child("profile"), m.Profile, 64))
			}
			if m.MemoryMiB <= 0 || m.MemoryMiB > g.MemoryMiB {
				errs = append(errs, field.Invalid(mp.Child("memoryMiB"), m.MemoryMiB, "must be greater than 0 and at most the GPU's memoryMiB"))
			}
			if m.ComputePercent < 0 || m.ComputePercent > 100 {
				errs = append(errs, field.Invalid(mp.Child("computePercent"), m.ComputePercent, "must be between 0 and 100"))
			}
			if len(m.CapabilityError) > maxCapabilityError {
				errs = append(errs, field.TooLong(mp.Child("capabilityError"), m.CapabilityError, maxCapabilityError))
			}
			if m.GPUInstanceID < 0 || m.ComputeInstanceID < 0 {
				errs = append(errs, field.Invalid(mp, fmt.Sprintf("%d/%d", m.GPUInstanceID, m.ComputeInstanceID), "instance IDs must be 0 or greater"))
			}
		}
	}
	if n := f.deviceCount(); n > maxGPUs {
		errs = append(errs, field.TooMany(gpusPath, n, maxGPUs))
	}
	return errs.ToAggregate()
}

// uniqueUUID checks a GPU's or MIG instance's UUID against those seen
// before on the node, and records it.
func uniqueUUID(path *field.Path, uuid string, seen map[string]bool) field.ErrorList {
	defer func() { seen[uuid] = true }()
	switch {
	case uuid == "":
		return field.ErrorList{field.Required(path, "every GPU and MIG instance needs a unique UUID")}
	case len(uuid) > 128:
		return field.ErrorList{field.TooLong(path, uuid, 128)}
	case seen[uuid]:
		return field.ErrorList{field.Duplicate(path, uuid)}
	}
	return nil
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
		d := gpu.Device{
			UUID:      g.UUID,
			Index:     g.index(i),
			Model:     g.Model,
			MemoryMiB: g.MemoryMiB,
			NUMANode:  numa,
			Health:    health,
			// A real GPU's minor number is its index but for rare
			// cases: good enough for a simulated one.
			DeviceNodes: []string{gpu.DeviceNode(g.index(i))},
			MIGGeometry: g.MIGGeometry,
		}
		if len(g.MIGInstances) == 0 {
			devices = append(devices, d)
			continue
		}
		for _, m := range g.MIGInstances {
			mig := &gpu.MIG{ParentUUID: d.UUID, Profile: m.Profile, GPUInstanceID: m.GPUInstanceID,
				ComputeInstanceID: m.ComputeInstanceID, ComputePercent: m.ComputePercent}
			if m.CapabilityError != "" {
				mig.CapsProblem = &gpu.CapsProblem{File: "/proc/" + gpu.MIGMinorsFile, Reason: m.CapabilityError}
			}
			devices = append(devices, gpu.Device{
				UUID:        m.UUID,
				Index:       d.Index,
				Model:       d.Model + " MIG " + m.Profile,
				MemoryMiB:   m.MemoryMiB,
				NUMANode:    d.NUMANode,
				Health:      d.Health,
				DeviceNodes: d.DeviceNodes,
				MIG:         mig,
			})
		}
	}
	return devices
}

// deviceCount is the number of devices the file makes: a MIG-mode GPU's
// instances count instead of the GPU.
func (f *File) deviceCount() int {
	n := 0
	for _, g := range f.GPUs {
		n += max(len(g.MIGInstances), 1)
	}
	return n
}
