package preemption

import (
	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// FitWithout places req on the node as it would be with the pods for
// which gone is true evicted: the GPUs the pod would get, or why it still
// would not fit. It runs under the view's read lock (in Read's fn).
func FitWithout(n *view.Node, req *placement.Request, gone func(types.UID) bool) ([]gpuv1alpha1.ContainerAllocation, *placement.Failure) {
	return placement.Fit(n.Without(gone), req)
}
