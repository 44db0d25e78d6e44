package gpurequest

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Policy orders candidates: Binpack prefers the busiest, Spread the emptiest.
type Policy string

const (
	// Binpack fills the busiest node or GPU first.
	Binpack Policy = "binpack"
	// Spread prefers the emptiest node or GPU.
	Spread Policy = "spread"
)

// ParsePolicy accepts "binpack" or "spread".
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case Binpack, Spread:
		return p, nil
	}
	return "", fmt.Errorf("unknown policy %q: must be %q or %q", s, Binpack, Spread)
}

// Annotation keys that steer placement. Each also accepts the HAMi key
// beside it (see annotationAliases).
const (
	AnnotationGPUType        = "tessera.dev/gpu-type"
	AnnotationGPUTypeExclude = "tessera.dev/gpu-type-exclude"
	AnnotationGPUUUID        = "tessera.dev/gpu-uuid"
	AnnotationGPUUUIDExclude = "tessera.dev/gpu-uuid-exclude"
	AnnotationNodePolicy     = "tessera.dev/node-policy"
	AnnotationGPUPolicy      = "tessera.dev/gpu-policy"
	AnnotationNUMABind       = "tessera.dev/numa-bind"
)

// annotationAliases maps each Tessera key to the HAMi key with the same meaning.
var annotationAliases = map[string]string{
	AnnotationGPUType:        "nvidia.com/use-gputype",
	AnnotationGPUTypeExclude: "nvidia.com/nouse-gputype",
	AnnotationGPUUUID:        "nvidia.com/use-gpuuuid",
	AnnotationGPUUUIDExclude: "nvidia.com/nouse-gpuuuid",
	AnnotationNodePolicy:     "hami.io/node-scheduler-policy",
	AnnotationGPUPolicy:      "hami.io/gpu-scheduler-policy",
	AnnotationNUMABind:       "nvidia.com/numa-bind",
}

// maxListItemLength bounds one entry of a type or UUID list.
const maxListItemLength = 128

// Selection is what a pod's annotations say about where it may run.
type Selection struct {
	// Types are lower-cased substrings; a GPU's model must contain one.
	Types []string
	// ExcludeTypes are lower-cased substrings a GPU's model must not contain.
	ExcludeTypes []string
	// UUIDs, when set, are the only GPUs allowed.
	UUIDs []string
	// ExcludeUUIDs are GPUs never allowed.
	ExcludeUUIDs []string
	// NodePolicy and GPUPolicy are empty when the pod leaves the choice to
	// the scheduler's defaults.
	NodePolicy Policy
	GPUPolicy  Policy
	// NUMABind asks that each container's GPUs share one NUMA node.
	NUMABind bool
}

// ParseAnnotations reads the placement annotations. Each error names the
// annotation and what it accepts.
func ParseAnnotations(annotations map[string]string) (Selection, error) {
	var (
		sel  Selection
		errs field.ErrorList
	)
	path := field.NewPath("metadata", "annotations")
	lookup := func(key string) (string, *field.Path, bool) {
		if v, ok := annotations[key]; ok {
			return v, path.Key(key), true
		}
		alias := annotationAliases[key]
		v, ok := annotations[alias]
		return v, path.Key(alias), ok
	}
	list := func(key string, lower bool) []string {
		v, fldPath, ok := lookup(key)
		if !ok {
			return nil
		}
		items, err := parseList(v, lower)
		if err != nil {
			errs = append(errs, field.Invalid(fldPath, v, err.Error()))
		}
		return items
	}
	policy := func(key string) Policy {
		v, fldPath, ok := lookup(key)
		if !ok {
			return ""
		}
		p, err := ParsePolicy(strings.TrimSpace(v))
		if err != nil {
			errs = append(errs, field.NotSupported(fldPath, v, []Policy{Binpack, Spread}))
		}
		return p
	}

	sel.Types = list(AnnotationGPUType, true)
	sel.ExcludeTypes = list(AnnotationGPUTypeExclude, true)
	sel.UUIDs = list(AnnotationGPUUUID, false)
	sel.ExcludeUUIDs = list(AnnotationGPUUUIDExclude, false)
	sel.NodePolicy = policy(AnnotationNodePolicy)
	sel.GPUPolicy = policy(AnnotationGPUPolicy)
	if v, fldPath, ok := lookup(AnnotationNUMABind); ok {
		switch strings.TrimSpace(strings.ToLower(v)) {
		case "true":
			sel.NUMABind = true
		case "false":
		default:
			errs = append(errs, field.NotSupported(fldPath, v, []string{"true", "false"}))
		}
	}
	return sel, errs.ToAggregate()
}

// parseList splits a comma-separated list, trimming spaces around entries.
func parseList(v string, lower bool) ([]string, error) {
	parts := strings.Split(v, ",")
	items := make([]string, 0, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		switch {
		case p == "":
			return nil, fmt.Errorf("entry %d is empty: must be a comma-separated list of non-empty names", i+1)
		case len(p) > maxListItemLength:
			return nil, fmt.Errorf("entry %d is %d characters long: must be at most %d", i+1, len(p), maxListItemLength)
		case strings.ContainsAny(p, " \t\n"):
			return nil, fmt.Errorf("entry %d (%q) contains white space", i+1, p)
		}
		if lower {
			p = strings.ToLower(p)
		}
		items = append(items, p)
	}
	return items, nil
}
