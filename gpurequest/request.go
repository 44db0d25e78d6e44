package gpurequest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// Limits of a single container's request.
const (
	// MaxCount is the most GPUs one container may ask for.
	MaxCount = 64
	// MaxPercent bounds gpucores and gpumem-percentage.
	MaxPercent = 100
	// MaxMemoryMiB bounds gpumem (1 PiB); it keeps sums far from overflow.
	MaxMemoryMiB = 1 << 30
)

// ContainerRequest is what one container asks for. Memory and cores are per
// GPU: a container asking for 2 GPUs and 4000 MiB gets 4000 MiB on each.
type ContainerRequest struct {
	// Name is the container's name.
	Name string
	// Kind says when the container runs, and so which containers hold GPUs
	// at the same time.
	Kind gpuv1alpha1.ContainerKind
	// Count is the number of distinct GPUs.
	Count int32
	// MemoryMiB is the memory on each GPU; with MemoryPercent also zero the
	// container takes each GPU's whole memory.
	MemoryMiB int64
	// MemoryPercent is the memory on each GPU as a percentage of its memory.
	MemoryPercent int32
	// Cores is the percent of each GPU's compute; 100 means exclusive use.
	Cores int32
}

// WholeMemory reports whether the container takes each GPU's whole memory.
func (r ContainerRequest) WholeMemory() bool { return r.MemoryMiB == 0 && r.MemoryPercent == 0 }

// MemoryOn returns the memory in MiB the request takes on a GPU of the given size.
func (r ContainerRequest) MemoryOn(gpuMemoryMiB int64) int64 {
	switch {
	case r.MemoryMiB > 0:
		return r.MemoryMiB
	case r.MemoryPercent > 0:
		return gpuMemoryMiB * int64(r.MemoryPercent) / 100
	default:
		return gpuMemoryMiB
	}
}

// PodRequests returns the requests of the pod's containers that ask for
// GPUs, in the order the kubelet allocates them: init containers first. The
// error lists every field of the pod that breaks a rule of
// ContainerRequestOf; a pod with any such field has no requests.
func PodRequests(pod *corev1.Pod, names ResourceNames) ([]ContainerRequest, error) {
	var (
		requests []ContainerRequest
		errs     field.ErrorList
	)
	EachContainer(pod, func(c *corev1.Container, kind gpuv1alpha1.ContainerKind, path *field.Path) {
		req, ok, cerrs := ContainerRequestOf(c, kind, names, path)
		errs = append(errs, cerrs...)
		if ok && len(cerrs) == 0 {
			requests = append(requests, req)
		}
	})
	return requests, errs.ToAggregate()
}

// EachContainer calls visit for every container of the pod in the order the
// kubelet allocates devices (init containers first), with the container's
// kind and its path in the pod spec.
func EachContainer(pod *corev1.Pod, visit func(c *corev1.Container, kind gpuv1alpha1.ContainerKind, path *field.Path)) {
	EachSpecContainer(&pod.Spec, field.NewPath("spec"), visit)
}

// EachSpecContainer is EachContainer for a pod spec that lies at path, such
// as a Job's spec.template.spec.
func EachSpecContainer(spec *corev1.PodSpec, path *field.Path, visit func(c *corev1.Container, kind gpuv1alpha1.ContainerKind, path *field.Path)) {
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		kind := gpuv1alpha1.ContainerInit
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			kind = gpuv1alpha1.ContainerSidecar
		}
		visit(c, kind, path.Child("initContainers").Index(i))
	}
	for i := range spec.Containers {
		visit(&spec.Containers[i], gpuv1alpha1.ContainerApp, path.Child("containers").Index(i))
	}
}

// ContainerRequestOf reads one container's request and checks it against
// every rule that protects a node; both the webhook and the extender call
// it, so that a pod the webhook never saw is held to the same rules. ok is
// false when the container asks for none of the resources, or only for a
// count of 0 (which charts often write to mean no GPU); a gpucores of 0 is
// read as no cores, as HAMi reads it (see Lookup). errs names each
// invalid field and its limit; path is the container's path in the pod.
func ContainerRequestOf(c *corev1.Container, kind gpuv1alpha1.ContainerKind, names ResourceNames, path *field.Path) (req ContainerRequest, ok bool, errs field.ErrorList) {
	req = ContainerRequest{Name: c.Name, Kind: kind}
	if zeroCountOnly(c, names, path) {
		return req, false, nil
	}
	read := func(name corev1.ResourceName, min, max int64) (int64, bool) {
		q, fldPath, found := names.quantity(c, name, path)
		if !found {
			return 0, false
		}
		ok = true
		v, err := boundedWholeNumber(q, min, max)
		if err != nil {
			errs = append(errs, field.Invalid(fldPath, q.String(), err.Error()))
		}
		return v, true
	}

	count, countSet := read(names.Count, 1, MaxCount)
	memory, memorySet := read(names.Memory, 1, MaxMemoryMiB)
	percent, percentSet := read(names.MemoryPercentage, 1, MaxPercent)
	// A gpucores of 0 asks for no share of the cores (see Lookup).
	cores, coresSet := read(names.Cores, 0, MaxPercent)
	if !ok {
		return req, false, nil
	}
	if memorySet && percentSet {
		_, fldPath, _ := names.quantity(c, names.MemoryPercentage, path)
		errs = append(errs, field.Forbidden(fldPath,
			fmt.Sprintf("may not be set together with %s: ask for memory in MiB or as a percentage, not both", names.Memory)))
	}
	slice := memorySet || percentSet || coresSet
	if slice && !countSet {
		errs = append(errs, missingCount(c, names, path))
	}
	if slice && privileged(c) {
		errs = append(errs, field.Forbidden(path.Child("securityContext", "privileged"), fmt.Sprintf(
			"must not be true when the container asks for a GPU slice (%s, %s or %s): a privileged container sees every GPU on the node, so its slice cannot be enforced; ask for whole GPUs with %s alone, or drop privileged",
			names.Memory, names.MemoryPercentage, names.Cores, names.Count)))
	}
	req.Count = int32(count)
	req.MemoryMiB = memory
	req.MemoryPercent = int32(percent)
	req.Cores = int32(cores)
	return req, true, errs
}

// missingCount is the error of a container that asks for a slice but no
// GPU count. The kubelet calls the device plugin only for containers that
// ask for the count resource, so such a container would be placed but
// never served: its allocation would hold the node's turn, and the next
// pod the kubelet admits there could be handed its GPUs. The admission
// webhook adds the count; a pod it did not see must carry it itself.
func missingCount(c *corev1.Container, names ResourceNames, path *field.Path) *field.Error {
	asked := names.Memory
	for _, name := range []corev1.ResourceName{names.Memory, names.MemoryPercentage, names.Cores} {
		if _, _, found := names.quantity(c, name, path); found {
			asked = name
			break
		}
	}
	return field.Required(path.Child("resources", "limits").Key(string(names.Count)), fmt.Sprintf(
		"the container asks for %s but not for %s, and the kubelet hands GPUs only to containers that ask for %s: add %s: 1 to its resources.limits",
		asked, names.Count, names.Count, names.Count))
}

// privileged reports whether the container runs privileged.
func privileged(c *corev1.Container) bool {
	return c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
}

// zeroCountOnly reports whether the container's only GPU resource is a
// count of exactly 0.
func zeroCountOnly(c *corev1.Container, names ResourceNames, path *field.Path) bool {
	q, _, found := names.quantity(c, names.Count, path)
	if !found || !q.IsZero() {
		return false
	}
	for _, name := range []corev1.ResourceName{names.Memory, names.MemoryPercentage, names.Cores} {
		if _, _, found := names.quantity(c, name, path); found {
			return false
		}
	}
	return true
}

// Lookup finds a resource in the container's limits, or else its requests.
// An explicit 0 of n.Cores is not found: HAMi reads gpucores: 0 as it reads
// no cores at all, and pod templates often set every resource, zeros
// included. Every reader of a pod's request looks resources up here, so
// that all front ends read such a pod alike.
func (n ResourceNames) Lookup(c *corev1.Container, name corev1.ResourceName) (resource.Quantity, bool) {
	q, _, found := n.lookup(c, name)
	return q, found
}

// lookup is Lookup that also says whether the resource is in the limits.
func (n ResourceNames) lookup(c *corev1.Container, name corev1.ResourceName) (q resource.Quantity, inLimits, found bool) {
	if q, found = c.Resources.Limits[name]; found {
		inLimits = true
	} else {
		q, found = c.Resources.Requests[name]
	}
	if found && name == n.Cores && q.IsZero() {
		return resource.Quantity{}, false, false
	}
	return q, inLimits, found
}

// quantity is Lookup with the path of the field the resource came from.
func (n ResourceNames) quantity(c *corev1.Container, name corev1.ResourceName, path *field.Path) (resource.Quantity, *field.Path, bool) {
	q, inLimits, found := n.lookup(c, name)
	if !found {
		return resource.Quantity{}, nil, false
	}
	list := "requests"
	if inLimits {
		list = "limits"
	}
	return q, path.Child("resources", list).Key(string(name)), true
}

// boundedWholeNumber returns q as a whole number from min to max. The
// bounds are checked first, so that a value far too large to be an int64,
// such as 1e30, is refused with the limit it broke.
func boundedWholeNumber(q resource.Quantity, min, max int64) (int64, error) {
	switch {
	case q.CmpInt64(min) < 0:
		return 0, fmt.Errorf("must be at least %d", min)
	case q.CmpInt64(max) > 0:
		return 0, fmt.Errorf("must be at most %d", max)
	}
	v, exact := q.AsInt64()
	if !exact {
		return 0, fmt.Errorf("must be a whole number")
	}
	return v, nil
}
