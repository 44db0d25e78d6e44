package simulated

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

var _ gpu.MIGMaker = (*Backend)(nil)

// InstancesFile is where the MIG instances made on the simulated GPUs of
// the file at path are kept, as the driver keeps them on a real node:
// beside it, so that they outlive the daemon.
func InstancesFile(path string) string { return path + ".mig-instances.json" }

// instance is one MIG instance in the instances file.
type instance struct {
	GPU string `json:"gpu"`
	gpu.MadeMIG
}

// validateGeometry checks a simulated GPU's MIG geometry: profiles with
// places to lie within 16 memory slices, and no instances beside it.
func validateGeometry(path *field.Path, g *gpuv1alpha1.MIGGeometry, instances bool) field.ErrorList {
	if g == nil {
		return nil
	}
	var errs field.ErrorList
	if instances {
		errs = append(errs, field.Forbidden(path, "may not be set together with migInstances: instances are either laid out or made on demand"))
	}
	if len(g.Profiles) == 0 {
		errs = append(errs, field.Required(path.Child("profiles"), "at least one MIG profile"))
	}
	for i, p := range g.Profiles {
		pp := path.Child("profiles").Index(i)
		if p.Name == "" || p.MemoryMiB <= 0 || len(p.Placements) == 0 {
			errs = append(errs, field.Invalid(pp, p.Name, "needs a name, memoryMiB above 0 and placements"))
		}
		for j, pl := range p.Placements {
			if pl.Start < 0 || pl.Size < 1 || pl.Start+pl.Size > 16 {
				errs = append(errs, field.Invalid(pp.Child("placements").Index(j), pl, "must lie within memory slices 0 to 15"))
			}
		}
	}
	return errs
}

// readInstances reads the instances file; a missing one holds none.
func (b *Backend) readInstances() ([]instance, error) {
	data, err := os.ReadFile(InstancesFile(b.path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the MIG instances: %w", err)
	}
	var out []instance
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("MIG instances file %s: %w", InstancesFile(b.path), err)
	}
	return out, nil
}

// writeInstances replaces the instances file at once.
func (b *Backend) writeInstances(instances []instance) error {
	data, err := json.Marshal(instances)
	if err != nil {
		return err
	}
	path := InstancesFile(b.path)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".mig-instances-*")
	if err != nil {
		return fmt.Errorf("writing the MIG instances: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the MIG instances: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing the MIG instances: %w", err)
	}
	return os.Rename(tmp.Name(), path)
}

// MIGInstances lists the instances made on the GPU.
func (b *Backend) MIGInstances(_ context.Context, gpuUUID string) ([]gpu.MadeMIG, error) {
	b.migMu.Lock()
	defer b.migMu.Unlock()
	all, err := b.readInstances()
	if err != nil {
		return nil, err
	}
	var out []gpu.MadeMIG
	for _, inst := range all {
		if inst.GPU == gpuUUID {
			out = append(out, inst.MadeMIG)
		}
	}
	return out, nil
}

// CreateMIG makes an instance of the profile at the placement, as the
// driver would: refused when the GPU has no such profile or placement,
// or when another instance takes any of its slices.
func (b *Backend) CreateMIG(_ context.Context, gpuUUID string, profileID int32, placement gpuv1alpha1.MIGPlacement) (gpu.MadeMIG, error) {
	b.migMu.Lock()
	defer b.migMu.Unlock()
	profile, err := b.profile(gpuUUID, profileID, placement)
	if err != nil {
		return gpu.MadeMIG{}, err
	}
	all, err := b.readInstances()
	if err != nil {
		return gpu.MadeMIG{}, err
	}
	next := 1
	for _, inst := range all {
		if inst.GPU != gpuUUID {
			continue
		}
		next = max(next, inst.GPUInstanceID+1)
		if p := inst.Placement; p.Start < placement.Start+placement.Size && placement.Start < p.Start+p.Size {
			return gpu.MadeMIG{}, fmt.Errorf("GPU %s has a MIG instance at memory slice %d, where a %s instance at slice %d would lie", gpuUUID, p.Start, profile, placement.Start)
		}
	}
	made := gpu.MadeMIG{ProfileID: profileID, Placement: placement, GPUInstanceID: next, UUID: fmt.Sprintf("MIG-%s-%d", gpuUUID, next)}
	if err := b.writeInstances(append(all, instance{GPU: gpuUUID, MadeMIG: made})); err != nil {
		return gpu.MadeMIG{}, err
	}
	return made, nil
}

// profile returns the name of the GPU's profile, checking that it may lie
// at the placement.
func (b *Backend) profile(gpuUUID string, profileID int32, placement gpuv1alpha1.MIGPlacement) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, g := range b.file.GPUs {
		if g.UUID != gpuUUID || g.MIGGeometry == nil {
			continue
		}
		for _, p := range g.MIGGeometry.Profiles {
			if p.ProfileID == profileID && slices.Contains(p.Placements, placement) {
				return p.Name, nil
			}
		}
		return "", fmt.Errorf("GPU %s has no MIG profile %d at memory slice %d", gpuUUID, profileID, placement.Start)
	}
	return "", fmt.Errorf("GPU %s is not in MIG mode", gpuUUID)
}

// DestroyMIG destroys the instance.
func (b *Backend) DestroyMIG(_ context.Context, gpuUUID string, gpuInstanceID int) error {
	b.migMu.Lock()
	defer b.migMu.Unlock()
	all, err := b.readInstances()
	if err != nil {
		return err
	}
	kept := slices.DeleteFunc(slices.Clone(all), func(inst instance) bool { return inst.GPU == gpuUUID && inst.GPUInstanceID == gpuInstanceID })
	if len(kept) == len(all) {
		return fmt.Errorf("GPU %s has no GPU instance %d", gpuUUID, gpuInstanceID)
	}
	return b.writeInstances(kept)
}
