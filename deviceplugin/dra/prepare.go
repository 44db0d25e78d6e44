package dra

import (
	"context"
	"errors"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/hamicore"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// prepare turns a claim's allocation on this node into prepared requests,
// makes the MIG instances it was allocated on GPUs that make them on
// demand, and writes their CDI specs. It refuses an allocation that names
// a device the node does not have, one that is unhealthy, or one that
// would hold more memory, cores or shares than the GPU has, or overlap an
// instance, together with the claims already prepared: kube-scheduler
// should never allocate those, and the driver is the last line of
// defence. What it made before failing is destroyed again.
func (d *Driver) prepare(ctx context.Context, claim *resourceapi.ResourceClaim) (*preparedClaim, error) {
	if claim.Status.Allocation == nil {
		return nil, fmt.Errorf("claim %s is not allocated", claimName(claim))
	}
	targets := d.targets()
	used := d.used()
	p := &preparedClaim{Namespace: claim.Namespace, Name: claim.Name}
	byRequest := map[string]int{}
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != gpuv1alpha1.DRADriverName {
			continue
		}
		if r.Pool != d.cfg.NodeName {
			return nil, fmt.Errorf("claim %s has device %s of pool %s, not of node %s", claimName(claim), r.Device, r.Pool, d.cfg.NodeName)
		}
		dev, err := d.check(claim, r, targets, used)
		if err != nil {
			return nil, err
		}
		i, ok := byRequest[r.Request]
		if !ok {
			i = len(p.Requests)
			byRequest[r.Request] = i
			p.Requests = append(p.Requests, preparedRequest{Request: r.Request})
		}
		p.Requests[i].Devices = append(p.Requests[i].Devices, dev)
	}
	if err := d.makeInstances(ctx, claim.UID, p); err != nil {
		return nil, fmt.Errorf("claim %s: %w", claimName(claim), err)
	}
	if err := d.writeSpecs(claim.UID, p.Requests); err != nil {
		return nil, errors.Join(err, d.destroyInstances(ctx, p))
	}
	return p, nil
}

// target is a published device: a GPU, or an instance a GPU whose
// instances are made on demand may be cut into.
type target struct {
	gpu     gpuv1alpha1.GPUDevice
	healthy bool
	// partition is set for an instance.
	partition *migPartition
}

// targets are the node's devices as published, by name.
func (d *Driver) targets() map[string]target {
	out := map[string]target{}
	for _, g := range d.cfg.Devices.Devices() {
		published := d.cfg.Scaling.Device(g)
		if published.MIGGeometry == nil {
			out[DeviceName(published)] = target{gpu: published, healthy: g.Health.Healthy}
			continue
		}
		for _, part := range migPartitions(published) {
			out[part.name] = target{gpu: published, healthy: g.Health.Healthy, partition: &part}
		}
	}
	return out
}

// check returns what allocation result r of the claim takes of its GPU,
// and adds it to used, or why the node cannot serve it.
func (d *Driver) check(claim *resourceapi.ResourceClaim, r resourceapi.DeviceRequestAllocationResult, targets map[string]target, used map[string]usage) (preparedDevice, error) {
	t, ok := targets[r.Device]
	if !ok {
		return preparedDevice{}, fmt.Errorf("claim %s has device %s, which node %s does not have", claimName(claim), r.Device, d.cfg.NodeName)
	}
	g := t.gpu
	if !t.healthy {
		return preparedDevice{}, fmt.Errorf("claim %s has GPU %s (%s), which is unhealthy", claimName(claim), r.Device, g.UUID)
	}
	dev := consumed(g, r)
	if t.partition != nil {
		dev = partitionUse(t.partition, r)
		if used[g.UUID].slices&dev.MIG.Placement.Slices() != 0 {
			return preparedDevice{}, fmt.Errorf("claim %s has MIG instance %s, which overlaps an instance of a prepared claim on GPU %s", claimName(claim), r.Device, g.UUID)
		}
	}
	total := used[g.UUID].add(dev)
	if err := total.fits(g); err != nil {
		return preparedDevice{}, fmt.Errorf("claim %s would overcommit GPU %s (%s): %w", claimName(claim), r.Device, g.UUID, err)
	}
	used[g.UUID] = total
	return dev, nil
}

// writeSpecs writes the CDI spec of each request of a claim, unless it is
// already on disk as it should be, and sets the request's CDI devices and
// spec file. When one fails, the specs written before it are removed.
func (d *Driver) writeSpecs(claim types.UID, requests []preparedRequest) error {
	for i := range requests {
		r := &requests[i]
		var err error
		if r.CDIDevices, r.SpecName, err = d.cdi.write(claim, r.Request, r.shares()); err != nil {
			return errors.Join(err, d.removeSpecs(&preparedClaim{Requests: requests[:i]}))
		}
	}
	return nil
}

// shares are the GPU shares of a request as HAMi-core's limits take them.
func (r *preparedRequest) shares() []hamicore.Share {
	out := make([]hamicore.Share, 0, len(r.Devices))
	for _, dev := range r.Devices {
		if dev.MIG != nil {
			// The instance, whole: its compute is all the container sees.
			out = append(out, hamicore.Share{UUID: dev.Instance, MemoryMiB: dev.MemoryMB, Cores: gpurequest.MaxPercent})
			continue
		}
		out = append(out, hamicore.Share{UUID: dev.UUID, MemoryMiB: dev.MemoryMB, Cores: int32(dev.Cores)})
	}
	return out
}

// consumed is what an allocation result takes of a GPU. A result without
// consumed capacity holds the whole GPU.
func consumed(g gpuv1alpha1.GPUDevice, r resourceapi.DeviceRequestAllocationResult) preparedDevice {
	dev := preparedDevice{Pool: r.Pool, Device: r.Device, ShareID: r.ShareID, UUID: g.UUID,
		MemoryMB: g.MemoryMiB, Cores: int64(g.Cores), Shares: int64(g.ShareLimit)}
	if r.ConsumedCapacity == nil {
		return dev
	}
	if q, ok := r.ConsumedCapacity[gpuv1alpha1.DRACapacityMemory]; ok {
		dev.MemoryMB = q.Value() / mebibyte
	}
	if q, ok := r.ConsumedCapacity[gpuv1alpha1.DRACapacityCores]; ok {
		dev.Cores = q.Value()
	}
	if q, ok := r.ConsumedCapacity[gpuv1alpha1.DRACapacityShares]; ok {
		dev.Shares = q.Value()
	}
	return dev
}

// usage is what the prepared claims hold of one GPU: memory, cores,
// shares, and the memory slices of its MIG instances made on demand.
type usage struct {
	memoryMiB, cores, shares int64
	slices                   uint16
}

func (u usage) add(d preparedDevice) usage {
	out := usage{u.memoryMiB + d.MemoryMB, u.cores + d.Cores, u.shares + d.Shares, u.slices}
	if d.MIG != nil {
		out.slices |= d.MIG.Placement.Slices()
	}
	return out
}

// fits says which of the GPU's capacities u exceeds.
func (u usage) fits(g gpuv1alpha1.GPUDevice) error {
	var errs []error
	if u.memoryMiB > g.MemoryMiB {
		errs = append(errs, fmt.Errorf("memory %d MiB of %d MiB", u.memoryMiB, g.MemoryMiB))
	}
	if u.cores > int64(g.Cores) {
		errs = append(errs, fmt.Errorf("cores %d of %d", u.cores, g.Cores))
	}
	if u.shares > int64(g.ShareLimit) {
		errs = append(errs, fmt.Errorf("shares %d of %d", u.shares, g.ShareLimit))
	}
	return errors.Join(errs...)
}

// used sums what the prepared claims hold, per GPU UUID.
func (d *Driver) used() map[string]usage {
	out := map[string]usage{}
	for _, c := range d.state.Claims {
		for _, r := range c.Requests {
			for _, dev := range r.Devices {
				out[dev.UUID] = out[dev.UUID].add(dev)
			}
		}
	}
	return out
}
