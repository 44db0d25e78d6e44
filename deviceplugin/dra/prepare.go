package dra

import (
	"errors"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/hamicore"
)

// prepare turns a claim's allocation on this node into prepared requests
// and writes their CDI specs. It refuses an allocation that names a GPU
// the node does not have, one that is unhealthy, or one that would hold
// more memory, cores or shares than the GPU has together with the claims
// already prepared: kube-scheduler should never allocate those, and the
// driver is the last line of defence.
func (d *Driver) prepare(claim *resourceapi.ResourceClaim) (*preparedClaim, error) {
	if claim.Status.Allocation == nil {
		return nil, fmt.Errorf("claim %s is not allocated", claimName(claim))
	}
	gpus := map[string]gpuv1alpha1.GPUDevice{}
	healthy := map[string]bool{}
	for _, g := range d.cfg.Devices.Devices() {
		published := d.cfg.Scaling.Device(g)
		name := DeviceName(published)
		gpus[name] = published
		healthy[name] = g.Health.Healthy
	}
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
		g, ok := gpus[r.Device]
		if !ok {
			return nil, fmt.Errorf("claim %s has device %s, which node %s does not have", claimName(claim), r.Device, d.cfg.NodeName)
		}
		if !healthy[r.Device] {
			return nil, fmt.Errorf("claim %s has GPU %s (%s), which is unhealthy", claimName(claim), r.Device, g.UUID)
		}
		dev := consumed(g, r)
		total := used[g.UUID].add(dev)
		if err := total.fits(g); err != nil {
			return nil, fmt.Errorf("claim %s would overcommit GPU %s (%s): %w", claimName(claim), r.Device, g.UUID, err)
		}
		used[g.UUID] = total
		i, ok := byRequest[r.Request]
		if !ok {
			i = len(p.Requests)
			byRequest[r.Request] = i
			p.Requests = append(p.Requests, preparedRequest{Request: r.Request})
		}
		p.Requests[i].Devices = append(p.Requests[i].Devices, dev)
	}
	if err := d.writeSpecs(claim.UID, p.Requests); err != nil {
		return nil, err
	}
	return p, nil
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

// usage is what the prepared claims hold of one GPU.
type usage struct {
	memoryMiB, cores, shares int64
}

func (u usage) add(d preparedDevice) usage {
	return usage{u.memoryMiB + d.MemoryMB, u.cores + d.Cores, u.shares + d.Shares}
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
