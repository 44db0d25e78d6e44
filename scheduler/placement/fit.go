package placement

import (
	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

var _ error = (*Failure)(nil)

// Fit places the request on the node without changing the node. It returns
// the assignment, the containers in the request's order, ready for
// GPUAllocation.Spec.Containers; or, when no placement exists, why not.
// A request with no containers fits with an empty assignment.
func Fit(node *Node, req *Request) ([]gpuv1alpha1.ContainerAllocation, *Failure) {
	var e engine
	if !e.place(node, req, true) {
		f := new(Failure)
		e.failure(f, &engine{free: true})
		return nil, f
	}
	return e.assignment(), nil
}

// Fitter decides requests on one node after another, reusing its scratch
// memory: a fresh engine is kilobytes to clear, more than deciding a pod
// on 8 GPUs takes, and filtering goes over thousands of nodes. Its zero
// value is ready for use; it is not safe for concurrent use.
type Fitter struct {
	e engine
	// empty decides whether a request would fit a node with no usage.
	empty engine
}

// Feasible reports whether the request fits the node, as Fit would, and
// when it does not, fills f (which may be nil) with why. Unlike Fit it
// allocates nothing, so filtering thousands of nodes creates no garbage.
func (ft *Fitter) Feasible(node *Node, req *Request, f *Failure) bool {
	if ft.e.place(node, req, false) {
		return true
	}
	if f != nil {
		ft.empty.free = true
		ft.e.failure(f, &ft.empty)
	}
	return false
}
