package admission

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// claimRequest is the name of the one request of every claim the webhook
// writes.
const claimRequest = "gpu"

// templatePrefix starts the name of every ResourceClaimTemplate the
// webhook writes; a hash of the template's spec follows.
const templatePrefix = "tessera-gpu-"

// gpuSize is one kind of GPU of the cluster, as far as a request that
// depends on the GPU it lands on needs to know: a memory percentage needs
// the memory, exclusive use the cores and the share limit.
type gpuSize struct {
	memoryMiB         int64
	cores, shareLimit int32
}

// claimSpec returns the claim a container's request becomes: one request
// of the webhook's DeviceClass for the container's count of GPUs, each
// with the request's memory and cores as consumable capacity, the pod's
// type, UUID and MIG annotations as CEL selectors, and constraints that
// keep the GPUs distinct (and on one NUMA node when asked). A memory
// percentage or exclusive use depends on the GPU: such a request lists one
// subrequest per kind of GPU the cluster has (sizes), kube-scheduler
// taking the first that fits. errs names each field DRA cannot express,
// and its limit; path is the count's path in the pod.
func (a *Admitter) claimSpec(r gpurequest.ContainerRequest, sel gpurequest.Selection, sizes func() []gpuSize, countPath *field.Path) (resourceapi.ResourceClaimSpec, field.ErrorList) {
	var errs field.ErrorList
	if r.Count > resourceapi.AllocationResultsMaxSize {
		errs = append(errs, field.Invalid(countPath, r.Count, fmt.Sprintf(
			"must be at most %d in DRA mode: a ResourceClaim holds at most %d devices", resourceapi.AllocationResultsMaxSize, resourceapi.AllocationResultsMaxSize)))
	}
	selectors, serrs := celSelectors(sel)
	errs = append(errs, serrs...)
	exact := resourceapi.ExactDeviceRequest{
		DeviceClassName: a.cfg.DeviceClass,
		AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
		Count:           int64(r.Count),
		Selectors:       selectors,
	}
	request := resourceapi.DeviceRequest{Name: claimRequest}
	exclusive := r.Cores == gpurequest.MaxPercent
	if r.MemoryPercent > 0 || exclusive {
		subs, serr := subrequests(r, exact, sizes(), exclusive, countPath)
		if serr != nil {
			errs = append(errs, serr)
		}
		request.FirstAvailable = subs
	} else {
		exact.Capacity = capacity(r.MemoryMiB, r.Cores, 0)
		request.Exactly = &exact
	}
	spec := resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{request}}}
	if r.Count > 1 {
		// Without it kube-scheduler may hand out two shares of one GPU.
		spec.Devices.Constraints = append(spec.Devices.Constraints, resourceapi.DeviceConstraint{
			Requests: []string{claimRequest}, DistinctAttribute: ptr.To(qualified(gpuv1alpha1.DRAAttributeUUID)),
		})
		if sel.NUMABind {
			spec.Devices.Constraints = append(spec.Devices.Constraints, resourceapi.DeviceConstraint{
				Requests: []string{claimRequest}, MatchAttribute: ptr.To(qualified(gpuv1alpha1.DRAAttributeNUMANode)),
			})
		}
	}
	return spec, errs
}

// subrequests lists one subrequest per kind of GPU, each selecting GPUs of
// that kind and asking for what the request takes of one.
func subrequests(r gpurequest.ContainerRequest, exact resourceapi.ExactDeviceRequest, sizes []gpuSize, exclusive bool, countPath *field.Path) ([]resourceapi.DeviceSubRequest, *field.Error) {
	what := "exclusive use (" + strconv.Itoa(gpurequest.MaxPercent) + " cores)"
	if r.MemoryPercent > 0 {
		what = "a memory percentage"
	}
	// Only what the request depends on tells kinds apart.
	var kinds []gpuSize
	for _, s := range sizes {
		if r.MemoryPercent == 0 {
			s.memoryMiB = 0
		}
		if !exclusive {
			s.cores, s.shareLimit = 0, 0
		}
		if !slices.Contains(kinds, s) {
			kinds = append(kinds, s)
		}
	}
	slices.SortFunc(kinds, func(x, y gpuSize) int {
		if x.memoryMiB != y.memoryMiB {
			return int(x.memoryMiB - y.memoryMiB)
		}
		if x.cores != y.cores {
			return int(x.cores - y.cores)
		}
		return int(x.shareLimit - y.shareLimit)
	})
	switch {
	case len(kinds) == 0:
		return nil, field.Forbidden(countPath, fmt.Sprintf(
			"in DRA mode %s depends on the GPU, and no DRA node reports its GPUs yet: create the pod again once a node daemon in DRA mode publishes its GPUNode", what))
	case len(kinds) > resourceapi.FirstAvailableDeviceRequestMaxSize:
		return nil, field.Forbidden(countPath, fmt.Sprintf(
			"in DRA mode %s becomes one subrequest per kind of GPU, at most %d, and the cluster has %d kinds; ask for memory in MiB (%s) or for fewer cores",
			what, resourceapi.FirstAvailableDeviceRequestMaxSize, len(kinds), "nvidia.com/gpumem"))
	}
	subs := make([]resourceapi.DeviceSubRequest, 0, len(kinds))
	for i, k := range kinds {
		memory, cores, shares := r.MemoryMiB, r.Cores, int32(0)
		var match []string
		if r.MemoryPercent > 0 {
			memory = max(k.memoryMiB*int64(r.MemoryPercent)/100, 1)
			match = append(match, capacityIs(gpuv1alpha1.DRACapacityMemory, strconv.FormatInt(k.memoryMiB, 10)+"Mi"))
		}
		if exclusive {
			cores, shares = k.cores, k.shareLimit
			match = append(match, capacityIs(gpuv1alpha1.DRACapacityCores, strconv.Itoa(int(k.cores))),
				capacityIs(gpuv1alpha1.DRACapacityShares, strconv.Itoa(int(k.shareLimit))))
		}
		selectors := slices.Clone(exact.Selectors)
		selectors = append(selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: strings.Join(match, " && ")}})
		subs = append(subs, resourceapi.DeviceSubRequest{
			Name:            "size-" + strconv.Itoa(i),
			DeviceClassName: exact.DeviceClassName,
			AllocationMode:  exact.AllocationMode,
			Count:           exact.Count,
			Selectors:       selectors,
			Capacity:        capacity(memory, cores, shares),
		})
	}
	return subs, nil
}

// capacity is what one GPU of the request consumes; a capacity left out
// takes the device's default (all of the memory, no cores, one share).
func capacity(memoryMiB int64, cores, shares int32) *resourceapi.CapacityRequirements {
	requests := map[resourceapi.QualifiedName]resource.Quantity{}
	if memoryMiB > 0 {
		requests[gpuv1alpha1.DRACapacityMemory] = *resource.NewQuantity(memoryMiB<<20, resource.BinarySI)
	}
	if cores > 0 {
		requests[gpuv1alpha1.DRACapacityCores] = *resource.NewQuantity(int64(cores), resource.DecimalSI)
	}
	if shares > 0 {
		requests[gpuv1alpha1.DRACapacityShares] = *resource.NewQuantity(int64(shares), resource.DecimalSI)
	}
	if len(requests) == 0 {
		return nil
	}
	return &resourceapi.CapacityRequirements{Requests: requests}
}

// qualified is an attribute's fully qualified name, for constraints.
func qualified(name resourceapi.QualifiedName) resourceapi.FullyQualifiedName {
	return resourceapi.FullyQualifiedName(gpuv1alpha1.DRADriverName + "/" + string(name))
}

// attribute and capacityOf are CEL references to a device's attribute
// and capacity in the driver's domain.
func attribute(name resourceapi.QualifiedName) string {
	return fmt.Sprintf("device.attributes[%q].%s", gpuv1alpha1.DRADriverName, name)
}

func capacityOf(name resourceapi.QualifiedName) string {
	return fmt.Sprintf("device.capacity[%q].%s", gpuv1alpha1.DRADriverName, name)
}

// capacityIs is a CEL condition that the device's capacity equals q.
func capacityIs(name resourceapi.QualifiedName, q string) string {
	return fmt.Sprintf("%s.compareTo(quantity(%q)) == 0", capacityOf(name), q)
}

// celSelectors turns the pod's type, UUID and MIG annotations into CEL
// selectors with the extender's meaning: a model contains one of the
// types (case-insensitive) and none of the excluded; a UUID is one of the
// allowed and none of the excluded (case-insensitive). Values were
// checked by gpurequest.ParseAnnotations: printable, no white space.
func celSelectors(sel gpurequest.Selection) ([]resourceapi.DeviceSelector, field.ErrorList) {
	model := attribute(gpuv1alpha1.DRAAttributeModel) + ".lowerAscii()"
	uuid := attribute(gpuv1alpha1.DRAAttributeUUID) + ".lowerAscii()"
	hasMIG := fmt.Sprintf("%q in device.attributes[%q]", gpuv1alpha1.DRAAttributeMIGProfile, gpuv1alpha1.DRADriverName)
	contains := func(values []string) string {
		terms := make([]string, 0, len(values))
		for _, v := range values {
			terms = append(terms, fmt.Sprintf("%s.contains(%s)", model, strconv.Quote(v)))
		}
		return "(" + strings.Join(terms, " || ") + ")"
	}
	in := func(ref string, values []string) string {
		quoted := make([]string, 0, len(values))
		for _, v := range values {
			quoted = append(quoted, strconv.Quote(strings.ToLower(v)))
		}
		return ref + " in [" + strings.Join(quoted, ", ") + "]"
	}
	type term struct{ annotation, expression string }
	var terms []term
	if len(sel.Types) > 0 {
		terms = append(terms, term{gpurequest.AnnotationGPUType, contains(sel.Types)})
	}
	if len(sel.ExcludeTypes) > 0 {
		terms = append(terms, term{gpurequest.AnnotationGPUTypeExclude, "!" + contains(sel.ExcludeTypes)})
	}
	if len(sel.UUIDs) > 0 {
		terms = append(terms, term{gpurequest.AnnotationGPUUUID, in(uuid, sel.UUIDs)})
	}
	if len(sel.ExcludeUUIDs) > 0 {
		terms = append(terms, term{gpurequest.AnnotationGPUUUIDExclude, "!(" + in(uuid, sel.ExcludeUUIDs) + ")"})
	}
	switch {
	case len(sel.MIGProfiles) > 0:
		terms = append(terms, term{gpurequest.AnnotationMIGProfile, hasMIG + " && " + in(attribute(gpuv1alpha1.DRAAttributeMIGProfile)+".lowerAscii()", sel.MIGProfiles)})
	case sel.Mode == gpurequest.ModeMIG:
		terms = append(terms, term{gpurequest.AnnotationGPUMode, hasMIG})
	case sel.Mode == gpurequest.ModeShared:
		terms = append(terms, term{gpurequest.AnnotationGPUMode, "!(" + hasMIG + ")"})
	}
	var (
		out  []resourceapi.DeviceSelector
		errs field.ErrorList
	)
	annotations := field.NewPath("metadata", "annotations")
	for _, t := range terms {
		if len(t.expression) > resourceapi.CELSelectorExpressionMaxLength {
			errs = append(errs, field.Forbidden(annotations.Key(t.annotation), fmt.Sprintf(
				"in DRA mode the list becomes a CEL selector of at most %d characters, and this one would have %d: list fewer entries (under this key or its HAMi alias)",
				resourceapi.CELSelectorExpressionMaxLength, len(t.expression))))
			continue
		}
		out = append(out, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: t.expression}})
	}
	return out, errs
}

// templateFor returns the ResourceClaimTemplate of a claim spec in the
// namespace, named by a hash of the spec: pods that ask for the same share
// one template, each getting its own claim from it.
func templateFor(namespace string, spec resourceapi.ResourceClaimSpec) (*resourceapi.ResourceClaimTemplate, error) {
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encoding a claim spec: %w", err)
	}
	sum := sha256.Sum256(data)
	t := &resourceapi.ResourceClaimTemplate{Spec: resourceapi.ResourceClaimTemplateSpec{Spec: spec}}
	t.Name = templatePrefix + hex.EncodeToString(sum[:])[:16]
	t.Namespace = namespace
	t.Labels = map[string]string{LabelManagedBy: FieldManager}
	return t, nil
}

// gpuSizes returns the kinds of GPU the GPUNodes of DRA nodes report,
// where the claims can land; MIG instances are left out, as they are
// never shared.
func (a *Admitter) gpuSizes() []gpuSize {
	nodes, err := a.gpuNodes.List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []gpuSize
	for _, n := range nodes {
		if n.Status.KubeletAPI != gpuv1alpha1.KubeletAPIDRA {
			continue
		}
		for _, d := range n.Status.Devices {
			s := gpuSize{memoryMiB: d.MemoryMiB, cores: d.Cores, shareLimit: d.ShareLimit}
			if d.MIG == nil && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// podClaimName is the name, in the pod, of the claim of the i-th container
// that asks for GPUs (init containers first).
func podClaimName(i int) string { return "tessera-gpu-" + strconv.Itoa(i) }
