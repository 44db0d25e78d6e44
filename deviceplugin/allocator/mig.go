package allocator

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc/codes"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// MIGPreparer makes the MIG instance the scheduler placed for a container
// on a GPU that makes them on demand.
type MIGPreparer interface {
	// Prepare returns the MIG device UUID of the instance want on the GPU,
	// made for owner: the pod's UID and the container's name.
	Prepare(ctx context.Context, gpuUUID, owner string, want *gpuv1alpha1.MIGAllocation) (string, error)
}

// prepareMIG makes the MIG instances of the served containers that the
// scheduler placed on GPUs that make them on demand, and gives each
// container its instance's UUID in the GPU's stead, with no compute limit
// inside it, as in DRA mode. An instance that
// cannot be made fails the allocation; the instances made for it are
// destroyed once it is Failed.
func (a *Allocator) prepareMIG(ctx context.Context, alloc *gpuv1alpha1.GPUAllocation, served []string, resp *pluginapi.AllocateResponse) error {
	for i, name := range served {
		k := slices.IndexFunc(alloc.Spec.Containers, func(c gpuv1alpha1.ContainerAllocation) bool { return c.Name == name })
		c := alloc.Spec.Containers[k]
		if !slices.ContainsFunc(c.Devices, func(d gpuv1alpha1.DeviceAllocation) bool { return d.MIG != nil }) {
			continue
		}
		if a.cfg.MIG == nil {
			return planError{codes.FailedPrecondition, fmt.Sprintf(
				"container %q of pod %s/%s was given a MIG instance made on demand, but node %s makes none (its daemon runs without dynamicMIG)", name, alloc.Namespace, alloc.Name, a.cfg.NodeName)}
		}
		c.Devices = slices.Clone(c.Devices)
		for j := range c.Devices {
			d := &c.Devices[j]
			if d.MIG == nil {
				continue
			}
			uuid, err := a.cfg.MIG.Prepare(ctx, d.UUID, string(alloc.Spec.PodUID)+"/"+name, d.MIG)
			if err != nil {
				return planError{codes.Internal, fmt.Sprintf("making the MIG instance of container %q of pod %s/%s on GPU %s: %v", name, alloc.Namespace, alloc.Name, d.UUID, err)}
			}
			// The instance is the container's whole: HAMi-core limits
			// compute within the device it sees, which is the instance.
			d.UUID, d.Cores = uuid, gpurequest.MaxPercent
		}
		resp.ContainerResponses[i] = a.cfg.Response.Container(alloc.Spec.PodUID, c)
	}
	return nil
}
