package drabench

import (
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/dra"
	"github.com/tessera-gpu/tessera/deviceplugin/nodestatus"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/webhook/draclaims"
)

// The pod every benchmark schedules, and every claim already allocated
// asks for: one GPU, 8 GiB of its memory and 30% of its compute.
const (
	podMemoryMiB = 8192
	podCores     = 30
)

// model is one way of publishing a node's GPUs and of asking for a slice
// of one.
type model struct {
	name string
	// slices are the node's ResourceSlices.
	slices func(node string) []*resourceapi.ResourceSlice
	// claim is what the pod asks for.
	claim resourceapi.ResourceClaimSpec
	// eligible says whether the claim may get the device; the fixture's
	// first fit tries only those.
	eligible func(resourceapi.Device) bool
}

// capacityModel is what Tessera publishes in DRA mode: each GPU one
// shareable device with memory, cores and shares as consumable capacity
// (dra.Resources), and the claim the webhook writes for the pod.
func capacityModel() (model, error) {
	scaling := nodestatus.Scaling{SplitCount: splitCount, MemoryScaling: 1, CoreScaling: 1}
	claim, err := webhookClaim(gpurequest.ContainerRequest{
		Name: "app", Kind: gpuv1alpha1.ContainerApp, Count: 1, MemoryMiB: podMemoryMiB, Cores: podCores,
	})
	if err != nil {
		return model{}, err
	}
	return model{
		name: "capacity",
		slices: func(node string) []*resourceapi.ResourceSlice {
			return resourceSlices(node, dra.Resources(node, nodeGPUs(node), nil, scaling))
		},
		claim:    claim,
		eligible: func(resourceapi.Device) bool { return true },
	}, nil
}

// webhookClaim is the claim spec the admission webhook in DRA mode writes
// for a container asking for r.
func webhookClaim(r gpurequest.ContainerRequest) (resourceapi.ResourceClaimSpec, error) {
	t := draclaims.NewTranslator(gpuv1alpha1.DRADriverName, gpurequest.DefaultResourceNames().Count, noGPUNodes{})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: benchNamespace}}
	out, refusals := t.Translate(pod, []draclaims.Container{{Request: r, Path: field.NewPath("spec", "containers").Index(0)}}, gpurequest.Selection{})
	if len(refusals) > 0 {
		return resourceapi.ResourceClaimSpec{}, refusals[0].Err
	}
	return out.Templates[0].Spec.Spec, nil
}

// noGPUNodes is an empty GPU inventory: the pod's request does not depend
// on the GPU it lands on, so the translation needs none.
type noGPUNodes struct{}

func (noGPUNodes) List(labels.Selector) ([]*gpuv1alpha1.GPUNode, error) { return nil, nil }
