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
	nodes, err := t.gpuNodes.List(labels.Everything())
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
