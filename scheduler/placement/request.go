package placement

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// Limits of what placement handles.
const (
	// MaxDevices is the most GPUs of one node that placement considers, the
	// API's limit on a GPUNode's devices.
	MaxDevices = 64
	// MaxContainers is the most GPU containers of one pod, the API's limit
	// on a GPUAllocation's containers.
	MaxContainers = 64
)

// Request is one pod's GPU request, resolved and ready for fitting.
type Request struct {
	// Containers are the pod's containers that ask for GPUs, in the
	// kubelet's order: init containers first.
	Containers []gpurequest.ContainerRequest
	// Selection is what the pod's annotations say about where it may run;
	// Types and ExcludeTypes are lower-case.
	Selection gpurequest.Selection
	// GPUPolicy chooses GPUs within a node: the pod's annotation or the
	// configured default. Anything but Binpack spreads.
	GPUPolicy gpurequest.Policy
}

// NewRequest builds a Request from a pod's parsed containers and
// annotations. The pod's GPU policy wins over defaultGPUPolicy. The type
// lists are lower-cased (into new slices; the arguments are not changed).
// The error names every field out of the limits placement handles.
func NewRequest(containers []gpurequest.ContainerRequest, sel gpurequest.Selection, defaultGPUPolicy gpurequest.Policy) (*Request, error) {
	if err := validateContainers(containers); err != nil {
		return nil, err
	}
	policy := sel.GPUPolicy
	if policy == "" {
		policy = defaultGPUPolicy
	}
	if _, err := gpurequest.ParsePolicy(string(policy)); err != nil {
		return nil, fmt.Errorf("GPU policy: %w", err)
	}
	sel.Types = lower(sel.Types)
	sel.ExcludeTypes = lower(sel.ExcludeTypes)
	return &Request{Containers: containers, Selection: sel, GPUPolicy: policy}, nil
}

// validateContainers checks what Fit relies on: a known kind, and each
// amount within gpurequest's limits.
func validateContainers(containers []gpurequest.ContainerRequest) error {
	var errs field.ErrorList
	path := field.NewPath("containers")
	if len(containers) > MaxContainers {
		errs = append(errs, field.TooMany(path, len(containers), MaxContainers))
	}
	for i, c := range containers {
		p := path.Index(i)
		switch c.Kind {
		case gpuv1alpha1.ContainerInit, gpuv1alpha1.ContainerSidecar, gpuv1alpha1.ContainerApp:
		default:
			errs = append(errs, field.NotSupported(p.Child("kind"), c.Kind,
				[]gpuv1alpha1.ContainerKind{gpuv1alpha1.ContainerInit, gpuv1alpha1.ContainerSidecar, gpuv1alpha1.ContainerApp}))
		}
		if c.Count < 1 || c.Count > gpurequest.MaxCount {
			errs = append(errs, field.Invalid(p.Child("count"), c.Count, fmt.Sprintf("must be between 1 and %d", gpurequest.MaxCount)))
		}
		if c.MemoryMiB < 0 || c.MemoryMiB > gpurequest.MaxMemoryMiB {
			errs = append(errs, field.Invalid(p.Child("memoryMiB"), c.MemoryMiB, fmt.Sprintf("must be between 0 and %d", gpurequest.MaxMemoryMiB)))
		}
		if c.MemoryPercent < 0 || c.MemoryPercent > gpurequest.MaxPercent {
			errs = append(errs, field.Invalid(p.Child("memoryPercent"), c.MemoryPercent, fmt.Sprintf("must be between 0 and %d", gpurequest.MaxPercent)))
		}
		if c.MemoryMiB > 0 && c.MemoryPercent > 0 {
			errs = append(errs, field.Forbidden(p.Child("memoryPercent"), "may not be set together with memoryMiB"))
		}
		if c.Cores < 0 || c.Cores > gpurequest.MaxPercent {
			errs = append(errs, field.Invalid(p.Child("cores"), c.Cores, fmt.Sprintf("must be between 0 and %d", gpurequest.MaxPercent)))
		}
	}
	return errs.ToAggregate()
}

func lower(items []string) []string {
	if items == nil {
		return nil
	}
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = strings.ToLower(s)
	}
	return out
}
