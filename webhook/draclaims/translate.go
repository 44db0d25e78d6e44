package draclaims

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// GPUNodeLister lists the cluster's GPU inventory, in production from an
// informer's lister.
type GPUNodeLister interface {
	List(selector labels.Selector) ([]*gpuv1alpha1.GPUNode, error)
}

// Translator turns the requests of a pod's containers into claims. It
// keeps no state between pods and is safe for concurrent use.
type Translator struct {
	deviceClass string
	count       corev1.ResourceName
	gpuNodes    GPUNodeLister
}

// NewTranslator returns a Translator whose claims ask for GPUs of
// deviceClass. count is the resource a container's GPU count is asked
// under, for the paths of errors; gpuNodes tells the GPU sizes a request
// that depends on the GPU (a memory percentage, exclusive use) becomes.
func NewTranslator(deviceClass string, count corev1.ResourceName, gpuNodes GPUNodeLister) *Translator {
	return &Translator{deviceClass: deviceClass, count: count, gpuNodes: gpuNodes}
}

// Container is a container that asks for GPUs: its request, checked
// against the rules of extender mode, and its path in the pod.
type Container struct {
	Request gpurequest.ContainerRequest
	Path    *field.Path
}

// Refusal is a field of a container's request that DRA cannot express.
type Refusal struct {
	// Container is the container's name.
	Container string
	// Err names the field and its limit.
	Err *field.Error
}

// Translation is what a pod's requests become.
type Translation struct {
	// Templates are the ResourceClaimTemplates of the claims, one per
	// distinct claim spec.
	Templates []*resourceapi.ResourceClaimTemplate
	// Claims are the pod's new claims; the i-th is the claim of the i-th
	// container translated.
	Claims []corev1.PodResourceClaim
}

// Translate returns the claims of the pod's containers that ask for GPUs
// (init containers first), named so as not to clash with the pod's own
// claims, or, when DRA cannot express a request, every reason.
func (t *Translator) Translate(pod *corev1.Pod, containers []Container, sel gpurequest.Selection) (Translation, []Refusal) {
	var (
		out      Translation
		refusals []Refusal
	)
	taken := map[string]bool{}
	for _, c := range pod.Spec.ResourceClaims {
		taken[c.Name] = true
	}
	next := 0
	for _, c := range containers {
		countPath := c.Path.Child("resources", "limits").Key(string(t.count))
		spec, errs := t.claimSpec(c.Request, pod.Annotations, sel, countPath)
		for _, err := range errs {
			refusals = append(refusals, Refusal{Container: c.Request.Name, Err: err})
		}
		if len(errs) > 0 {
			continue
		}
		tmpl, err := templateFor(pod.Namespace, spec)
		if err != nil {
			refusals = append(refusals, Refusal{Container: c.Request.Name, Err: field.InternalError(c.Path, err)})
			continue
		}
		if !slices.ContainsFunc(out.Templates, func(o *resourceapi.ResourceClaimTemplate) bool { return o.Name == tmpl.Name }) {
			out.Templates = append(out.Templates, tmpl)
		}
		for taken[podClaimName(next)] {
			next++
		}
		claim := podClaimName(next)
		taken[claim] = true
		out.Claims = append(out.Claims, corev1.PodResourceClaim{Name: claim, ResourceClaimTemplateName: &tmpl.Name})
	}
	if len(refusals) > 0 {
		return Translation{}, refusals
	}
	return out, nil
}

// podClaimName is the name, in the pod, of the claim of the i-th container
// that asks for GPUs (init containers first).
func podClaimName(i int) string { return "tessera-gpu-" + strconv.Itoa(i) }
