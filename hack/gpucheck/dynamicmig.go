package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu/nvmlgpu"
)

// checkDynamicMIG makes and destroys one MIG instance, as a device plugin
// with dynamicMIG does, on the first GPU that is in MIG mode and has no
// instance. It never changes a GPU's MIG mode, and never touches a GPU
// with instances, which may be in use: it says plainly that it skips then.
// instances counts the MIG devices discovery found on each GPU.
func checkDynamicMIG(ctx context.Context, out io.Writer, lib nvml.Interface, instances map[string]int) (err error) {
	b := nvmlgpu.New(lib, nvmlgpu.Options{DynamicMIG: true})
	defer func() {
		if cerr := b.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("closing NVML: %w", cerr))
		}
	}()
	inv, err := b.Discover(ctx)
	if err != nil {
		return fmt.Errorf("discovery with dynamic MIG: %w", err)
	}
	inMIGMode := 0
	for _, d := range inv.Devices {
		if d.MIGGeometry == nil {
			continue
		}
		inMIGMode++
		made, err := b.MIGInstances(ctx, d.UUID)
		if err != nil {
			return fmt.Errorf("listing the MIG instances of GPU %s: %w", d.UUID, err)
		}
		if n := max(len(made), instances[d.UUID]); n > 0 {
			fmt.Fprintf(out, "dynamic MIG: GPU %s is in MIG mode but has %d instances, which may be in use; not touching it\n", d.UUID, n)
			continue
		}
		p := d.MIGGeometry.Profiles[0]
		fmt.Fprintf(out, "dynamic MIG: GPU %s offers %d profiles; making a %s instance (profile ID %d) at memory slice %d\n",
			d.UUID, len(d.MIGGeometry.Profiles), p.Name, p.ProfileID, p.Placements[0].Start)
		inst, err := b.CreateMIG(ctx, d.UUID, p.ProfileID, p.Placements[0])
		if err != nil {
			return fmt.Errorf("dynamic MIG: %w", err)
		}
		fmt.Fprintf(out, "dynamic MIG: made GPU instance %d, MIG device %s; destroying it\n", inst.GPUInstanceID, inst.UUID)
		if err := b.DestroyMIG(ctx, d.UUID, inst.GPUInstanceID); err != nil {
			return fmt.Errorf("dynamic MIG: %w", err)
		}
		if left, err := b.MIGInstances(ctx, d.UUID); err != nil || len(left) > 0 {
			return fmt.Errorf("dynamic MIG: after destroying, GPU %s has instances %+v (%v)", d.UUID, left, err)
		}
		fmt.Fprintf(out, "dynamic MIG: made and destroyed an instance on GPU %s; it has none again\n", d.UUID)
		return nil
	}
	if inMIGMode == 0 {
		fmt.Fprintln(out, "dynamic MIG: SKIPPED: no GPU is in MIG mode; this check never changes MIG mode (an administrator enables it with nvidia-smi -i <index> -mig 1)")
	} else {
		fmt.Fprintln(out, "dynamic MIG: SKIPPED: every GPU in MIG mode has instances; this check needs one with none")
	}
	return nil
}
