package gpurequest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MIGOnlyKey returns the annotation key, as the pod wrote it, that limits
// the pod to MIG instances (a MIG profile, or the GPU mode mig under
// either key), or "" when none does. annotations parse to sel.
func MIGOnlyKey(annotations map[string]string, sel Selection) string {
	var key string
	switch {
	case len(sel.MIGProfiles) > 0:
		key = AnnotationMIGProfile
	case sel.Mode == ModeMIG:
		key = AnnotationGPUMode
	default:
		return ""
	}
	if _, ok := annotations[key]; !ok && annotationAliases[key] != "" {
		return annotationAliases[key]
	}
	return key
}

// MIGCountError refuses a container of a pod limited to MIG instances
// that asks for more than one GPU: every GPU it may get is a MIG
// instance, and a container gets at most one, since CUDA uses one MIG
// instance per process. It is nil for any other container. key is what
// MIGOnlyKey returned; countPath is the path of the container's count.
func MIGCountError(r ContainerRequest, key string, countPath *field.Path, count corev1.ResourceName) *field.Error {
	if key == "" || r.Count <= 1 {
		return nil
	}
	return field.Invalid(countPath, r.Count, fmt.Sprintf(
		"must be 1, since the pod asks for MIG instances only (%s): a container gets one MIG instance, whole, as CUDA uses one MIG instance per process; give each process that needs one a container of its own with %s: 1",
		key, count))
}
