package draclaims

import (
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// gpuSize is one kind of GPU of the cluster, as far as a request that
// depends on the GPU it lands on needs to know: a memory percentage needs
// the memory, exclusive use the cores and the share limit.
type gpuSize struct {
	memoryMiB         int64
	cores, shareLimit int32
}

// gpuSizes returns the kinds of GPU the GPUNodes of DRA nodes report,
// where the claims can land; MIG instances are left out, as they are
// never shared.
func (t *Translator) gpuSizes() []gpuSize {
	var out []gpuSize
	for _, d := range t.draGPUs() {
		s := gpuSize{memoryMiB: d.MemoryMiB, cores: d.Cores, shareLimit: d.ShareLimit}
		if d.MIG == nil && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// draGPUs returns the GPUs the GPUNodes of DRA nodes report; none when
// they cannot be listed.
func (t *Translator) draGPUs() []gpuv1alpha1.GPUDevice {
	nodes, err := t.gpuNodes.List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []gpuv1alpha1.GPUDevice
	for _, n := range nodes {
		if n.Status.KubeletAPI == gpuv1alpha1.KubeletAPIDRA {
			out = append(out, n.Status.Devices...)
		}
	}
	return out
}
