package gpurequest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

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
	AnnotationGPUMode        = "tessera.dev/gpu-mode"
	AnnotationMIGProfile     = "tessera.dev/mig-profile"
)

// Mode says whether a pod wants MIG instances or shared whole GPUs.
type Mode string

const (
	// ModeMIG asks for MIG instances only.
	ModeMIG Mode = "mig"
	// ModeShared asks for whole GPUs shared by HAMi-core limits only (HAMi
	// calls the mode after its library).
	ModeShared Mode = "hami-core"
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
	AnnotationGPUMode:        "nvidia.com/vgpu-mode",
	// HAMi has no key for a MIG profile: it picks the instance by memory.
	AnnotationMIGProfile: "",
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
	// Mode, when set, limits the pod to MIG instances or to whole GPUs.
	Mode Mode
	// MIGProfiles, when set, are the only MIG profiles allowed (such as
	// 1g.10gb), lower-cased; the pod then gets MIG instances only.
	MIGProfiles []string
}

// ParseAnnotations reads the placement annotations. Each error names the
// annotation and what it accepts. A Tessera key and its HAMi alias may
// both be set only when they say the same: a pod that asks for A100s under
// one key and T4s under the other is refused rather than placed by
// whichever key happens to win.
func ParseAnnotations(annotations map[string]string) (Selection, error) {
	var (
		sel  Selection
		errs field.ErrorList
	)
	path := field.NewPath("metadata", "annotations")
	lower := func(v string) ([]string, error) { return parseList(v, true) }
	exact := func(v string) ([]string, error) { return parseList(v, false) }
	sel.Types = annotation(annotations, path, AnnotationGPUType, lower, slices.Equal, &errs)
	sel.ExcludeTypes = annotation(annotations, path, AnnotationGPUTypeExclude, lower, slices.Equal, &errs)
	sel.UUIDs = annotation(annotations, path, AnnotationGPUUUID, exact, slices.Equal, &errs)
	sel.ExcludeUUIDs = annotation(annotations, path, AnnotationGPUUUIDExclude, exact, slices.Equal, &errs)
	sel.NodePolicy = annotation(annotations, path, AnnotationNodePolicy, parsePolicyAnnotation, equal, &errs)
	sel.GPUPolicy = annotation(annotations, path, AnnotationGPUPolicy, parsePolicyAnnotation, equal, &errs)
	sel.NUMABind = annotation(annotations, path, AnnotationNUMABind, parseBool, equal, &errs)
	sel.Mode = annotation(annotations, path, AnnotationGPUMode, parseMode, equal, &errs)
	sel.MIGProfiles = annotation(annotations, path, AnnotationMIGProfile, lower, slices.Equal, &errs)
	if len(sel.MIGProfiles) > 0 && sel.Mode == ModeShared {
		errs = append(errs, field.Invalid(path.Key(AnnotationMIGProfile), annotations[AnnotationMIGProfile],
			fmt.Sprintf("asks for MIG instances, but the GPU mode asks for %s-shared whole GPUs only", ModeShared)))
	}
	return sel, errs.ToAggregate()
}

// annotation reads the annotation under key, or else under its HAMi
// alias, with parse; when both are set, their values must parse the same.
// Errors go to errs, and the value is then the zero value.
func annotation[T any](annotations map[string]string, path *field.Path, key string, parse func(string) (T, error), same func(a, b T) bool, errs *field.ErrorList) T {
	var zero T
	alias := annotationAliases[key]
	v, ok := annotations[key]
	av, aliasOK := annotations[alias]
	if !ok && !aliasOK {
		return zero
	}
	if !ok {
		key, v = alias, av
	}
	got, err := parse(v)
	if err != nil {
		*errs = append(*errs, invalidAnnotation(path.Key(key), v, err))
		return zero
	}
	if ok && aliasOK {
		other, err := parse(av)
		if err != nil {
			*errs = append(*errs, invalidAnnotation(path.Key(alias), av, err))
			return zero
		}
		if !same(got, other) {
			*errs = append(*errs, field.Invalid(path.Key(alias), av, fmt.Sprintf(
				"disagrees with %s (%q): the two keys mean the same, so set one of them, or both to the same value", key, v)))
			return zero
		}
	}
	return got
}

// invalidAnnotation words a value parse refused: a NotSupported error
// keeps its own type, so that it lists the accepted values.
func invalidAnnotation(fldPath *field.Path, v string, err error) *field.Error {
	var notSupported notSupportedError
	if errors.As(err, &notSupported) {
		return field.NotSupported(fldPath, v, notSupported.choices)
	}
	return field.Invalid(fldPath, v, err.Error())
}

// notSupportedError is a value outside a fixed set of choices.
type notSupportedError struct{ choices []string }

func (e notSupportedError) Error() string {
	return fmt.Sprintf("must be one of %q", e.choices)
}

func equal[T comparable](a, b T) bool { return a == b }

func parsePolicyAnnotation(v string) (Policy, error) {
	p, err := ParsePolicy(strings.TrimSpace(v))
	if err != nil {
		return "", notSupportedError{[]string{string(Binpack), string(Spread)}}
	}
	return p, nil
}

func parseMode(v string) (Mode, error) {
	switch m := Mode(strings.TrimSpace(strings.ToLower(v))); m {
	case ModeMIG, ModeShared:
		return m, nil
	}
	return "", notSupportedError{[]string{string(ModeMIG), string(ModeShared)}}
}

func parseBool(v string) (bool, error) {
	switch strings.TrimSpace(strings.ToLower(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, notSupportedError{[]string{"true", "false"}}
}

// parseList splits a comma-separated list, trimming spaces around entries.
// An entry may hold only printable characters: a control or formatting
// character (NUL, a right-to-left override) would make the value read
// differently to a person than to the scheduler.
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
		if r, ok := unprintable(p); ok {
			return nil, fmt.Errorf("entry %d contains the character %U, which is not printable: must hold only letters, digits, punctuation and symbols", i+1, r)
		}
		if lower {
			p = strings.ToLower(p)
		}
		items = append(items, p)
	}
	return items, nil
}

// unprintable returns the first rune of s that is not printable, or that
// is not valid UTF-8.
func unprintable(s string) (rune, bool) {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size <= 1 {
				return r, true
			}
		}
		if !unicode.IsPrint(r) {
			return r, true
		}
	}
	return 0, false
}

// WrittenKey is the key under which annotations set what key means: key
// itself, or its HAMi alias when only that is set. Messages about a
// setting name the key the pod's author wrote.
func WrittenKey(annotations map[string]string, key string) string {
	if _, ok := annotations[key]; ok {
		return key
	}
	if alias := annotationAliases[key]; alias != "" {
		if _, ok := annotations[alias]; ok {
			return alias
		}
	}
	return key
}
