package dra

import (
	"context"
	"errors"
	"fmt"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/dynamicmig"
)

// MIGMaker makes and destroys the MIG instances of GPUs whose instances
// are made on demand (dynamicmig.Manager).
type MIGMaker interface {
	// Prepare returns the MIG device UUID of the instance want on the
	// GPU, made for owner.
	Prepare(ctx context.Context, gpuUUID, owner string, want *gpuv1alpha1.MIGAllocation) (string, error)
	// Destroy destroys the instance want on the GPU, if it is there.
	Destroy(ctx context.Context, gpuUUID string, want *gpuv1alpha1.MIGAllocation) error
}

var _ MIGMaker = (*dynamicmig.Manager)(nil)

// partitionUse is what an allocated instance takes of its GPU: the
// profile's memory and compute, and one share.
func partitionUse(p *migPartition, r resourceapi.DeviceRequestAllocationResult) preparedDevice {
	return preparedDevice{Pool: r.Pool, Device: r.Device, ShareID: r.ShareID, UUID: p.gpu.UUID,
		MemoryMB: p.profile.MemoryMiB, Cores: int64(p.profile.ComputePercent), Shares: 1, MIG: p.allocation()}
}

// owner names what an instance is made for: one device of one claim.
func owner(claim types.UID, dev *preparedDevice) string { return string(claim) + "/" + dev.Device }

// makeInstances makes the MIG instances of the claim's devices on GPUs
// whose instances are made on demand, and records their UUIDs. One that
// is there already for the claim is kept: the kubelet prepares a claim
// again after a restart, and a reboot, which destroys the instances,
// makes them anew. When one cannot be made, those made are destroyed.
func (d *Driver) makeInstances(ctx context.Context, claim types.UID, p *preparedClaim) error {
	for i := range p.Requests {
		for j := range p.Requests[i].Devices {
			dev := &p.Requests[i].Devices[j]
			if dev.MIG == nil {
				continue
			}
			if d.cfg.MIG == nil {
				return fmt.Errorf("device %s is a MIG instance made on demand, but node %s makes none (its daemon runs without dynamicMIG)", dev.Device, d.cfg.NodeName)
			}
			uuid, err := d.cfg.MIG.Prepare(ctx, dev.UUID, owner(claim, dev), dev.MIG)
			if err != nil {
				err = fmt.Errorf("making the %s MIG instance at memory slice %d of GPU %s: %w", dev.MIG.Profile, dev.MIG.Placement.Start, dev.UUID, err)
				return errors.Join(err, d.destroyInstances(ctx, p))
			}
			dev.Instance = uuid
		}
	}
	return nil
}

// destroyInstances destroys the MIG instances made for the claim.
func (d *Driver) destroyInstances(ctx context.Context, p *preparedClaim) error {
	if d.cfg.MIG == nil {
		return nil
	}
	var errs []error
	for _, r := range p.Requests {
		for _, dev := range r.Devices {
			if dev.MIG != nil && dev.Instance != "" {
				errs = append(errs, d.cfg.MIG.Destroy(ctx, dev.UUID, dev.MIG))
			}
		}
	}
	return errors.Join(errs...)
}

// NeededMIG lists the MIG instances the prepared claims hold; any other
// instance on a GPU that makes them on demand is a leftover, of a claim
// unprepared while its instance could not be destroyed, or of a daemon
// that stopped between making an instance and recording it.
func (d *Driver) NeededMIG() ([]dynamicmig.Needed, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []dynamicmig.Needed
	for _, c := range d.state.Claims {
		for _, r := range c.Requests {
			for _, dev := range r.Devices {
				if dev.MIG != nil {
					out = append(out, dynamicmig.Needed{GPU: dev.UUID, MIG: *dev.MIG})
				}
			}
		}
	}
	return out, nil
}

// prepareAgain answers the kubelet for a claim prepared before: its MIG
// instances are made again where they are gone, as after a reboot, the
// checkpoint records their new UUIDs, and the specs are written again
// where they are missing or differ.
func (d *Driver) prepareAgain(ctx context.Context, claim types.UID, p *preparedClaim) error {
	before := instances(p)
	if err := d.makeInstances(ctx, claim, p); err != nil {
		return err
	}
	if !slices.Equal(before, instances(p)) {
		if err := d.state.save(d.checkpointPath); err != nil {
			return err
		}
	}
	return d.rewriteSpecs(claim, p)
}

// instances are the MIG device UUIDs of the claim's instances.
func instances(p *preparedClaim) []string {
	var out []string
	for _, r := range p.Requests {
		for _, dev := range r.Devices {
			if dev.MIG != nil {
				out = append(out, dev.Instance)
			}
		}
	}
	return out
}
