package gpurequest

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// MIGResourcePrefix begins the names under which the NVIDIA device
// plugin's mixed strategy offers MIG instances, as in
// nvidia.com/mig-3g.20gb: each unit is one instance of that profile.
const MIGResourcePrefix = "nvidia.com/mig-"

// migProfilePattern is a MIG profile as NVIDIA names it: compute
// instance slices when fewer than the GPU instance's (1c.), GPU instance
// slices and memory in GB, and any variant suffix (+me, +gfx, -me).
var migProfilePattern = regexp.MustCompile(`^([1-9][0-9]*c\.)?[1-9][0-9]*g\.[1-9][0-9]*gb([+-][a-z]+)*$`)

// MIGResourceName is NVIDIA's resource name of a MIG profile.
func MIGResourceName(profile string) corev1.ResourceName {
	return corev1.ResourceName(MIGResourcePrefix + profile)
}

// MIGContainer is a container that asks for a MIG instance by NVIDIA's
// resource name.
type MIGContainer struct {
	// Container is the container, in the spec that was read.
	Container *corev1.Container
	// Resource is the name the container wrote, such as nvidia.com/mig-3g.20gb.
	Resource corev1.ResourceName
	// InRequests is set when the name is also in the container's requests.
	InRequests bool
}

// MIGAsk is what a pod asks for by NVIDIA's MIG resource names.
type MIGAsk struct {
	// Profile is the profile asked, lower-cased, such as 3g.20gb.
	Profile string
	// Containers are the containers that ask for an instance of it.
	Containers []MIGContainer
}

// SpecMIGAsk reads the NVIDIA MIG resources of a pod spec, with the pod's
// annotations; the paths say where they lie, for messages. Tessera serves them as it serves the
// tessera.dev/mig-profile annotation: each asking container gets one
// instance of the profile, whole. The errors name each field that asks
// for what that cannot express: a name that is no MIG profile, more than
// one instance in a container, a MIG resource beside Tessera's GPU
// resources, containers of one pod asking for different profiles or for
// GPUs that are no MIG instance, and annotations that say otherwise. A
// pod that names no MIG resource, or only with a quantity of 0, asks for
// none: the Profile is empty.
func SpecMIGAsk(annotations map[string]string, spec *corev1.PodSpec, specPath, annotationsPath *field.Path, names ResourceNames) (MIGAsk, field.ErrorList) {
	var (
		ask       MIGAsk
		errs      field.ErrorList
		first     corev1.ResourceName
		otherGPUs []*field.Path
	)
	EachSpecContainer(spec, specPath, func(c *corev1.Container, _ gpuv1alpha1.ContainerKind, cpath *field.Path) {
		found, cerrs := containerMIG(c, cpath, names)
		errs = append(errs, cerrs...)
		if found == nil {
			if asksTessera(c, names) {
				otherGPUs = append(otherGPUs, cpath)
			}
			return
		}
		profile := strings.TrimPrefix(string(found.Resource), MIGResourcePrefix)
		switch {
		case ask.Profile == "":
			ask.Profile, first = profile, found.Resource
		case ask.Profile != profile:
			errs = append(errs, field.Forbidden(cpath.Child("resources", "limits").Key(string(found.Resource)), fmt.Sprintf(
				"asks for a MIG instance of another profile than %s: the MIG instances of one pod are of one profile; put containers that need other profiles in pods of their own", first)))
			return
		}
		ask.Containers = append(ask.Containers, *found)
	})
	if ask.Profile == "" {
		return MIGAsk{}, errs
	}
	for _, p := range otherGPUs {
		errs = append(errs, field.Forbidden(p.Child("resources", "limits"), fmt.Sprintf(
			"asks for GPUs that are no MIG instance, beside a container that asks for %s: every container of a pod that asks for a MIG instance by NVIDIA's name gets a %s instance; ask for one with %s: 1, or put this container in a pod of its own",
			first, ask.Profile, first)))
	}
	sel, _ := ParseAnnotations(annotations) // the annotations' own errors are reported where they are checked
	switch {
	case sel.Mode == ModeShared:
		errs = append(errs, field.Invalid(annotationsPath.Key(AnnotationGPUMode), string(sel.Mode), fmt.Sprintf(
			"asks for whole GPUs shared by %s only, but the pod asks for %s, a MIG instance", ModeShared, first)))
	case len(sel.MIGProfiles) > 0 && (len(sel.MIGProfiles) != 1 || sel.MIGProfiles[0] != ask.Profile):
		errs = append(errs, field.Invalid(annotationsPath.Key(AnnotationMIGProfile), annotations[AnnotationMIGProfile], fmt.Sprintf(
			"must be %s, or unset, since the pod asks for %s", ask.Profile, first)))
	}
	return ask, errs
}

// containerMIG returns the MIG resource the container asks for, nil when
// none, and the errors of what it asks that cannot be served.
func containerMIG(c *corev1.Container, cpath *field.Path, names ResourceNames) (*MIGContainer, field.ErrorList) {
	var (
		found *MIGContainer
		errs  field.ErrorList
	)
	limits := cpath.Child("resources", "limits")
	for _, name := range slices.Sorted(maps.Keys(c.Resources.Limits)) {
		q := c.Resources.Limits[name]
		if !strings.HasPrefix(string(name), MIGResourcePrefix) || q.IsZero() {
			continue
		}
		fld := limits.Key(string(name))
		profile := strings.TrimPrefix(string(name), MIGResourcePrefix)
		if !migProfilePattern.MatchString(profile) {
			errs = append(errs, field.Invalid(fld, q.String(), fmt.Sprintf(
				"names no MIG profile: NVIDIA's MIG resources are %s<profile>, with the profile as nvidia-smi mig -lgip lists it, such as %s",
				MIGResourcePrefix, MIGResourceName("3g.20gb"))))
			continue
		}
		if _, err := boundedWholeNumber(q, 1, 1); err != nil {
			errs = append(errs, field.Invalid(fld, q.String(), err.Error()+
				": each unit is one MIG instance, and a container gets at most one, since CUDA uses one MIG instance per process; give each process that needs an instance a container of its own"))
			continue
		}
		if found != nil {
			errs = append(errs, field.Forbidden(fld, fmt.Sprintf(
				"may not be set together with %s: a container gets one MIG instance", found.Resource)))
			continue
		}
		_, inRequests := c.Resources.Requests[name]
		found = &MIGContainer{Container: c, Resource: name, InRequests: inRequests}
	}
	if found != nil && asksTessera(c, names) {
		errs = append(errs, field.Forbidden(limits.Key(string(found.Resource)), fmt.Sprintf(
			"may not be set together with %s, %s, %s or %s: a MIG instance is handed out whole; ask for it alone",
			names.Count, names.Memory, names.MemoryPercentage, names.Cores)))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return found, nil
}

// asksTessera reports whether the container names any of Tessera's GPU
// resources, other than a count of 0.
func asksTessera(c *corev1.Container, names ResourceNames) bool {
	for _, name := range names.All() {
		if q, ok := names.Lookup(c, name); ok && !(name == names.Count && q.IsZero()) {
			return true
		}
	}
	return false
}
