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
		e.failure(f)
		return nil, f
	}
	return e.assignment(), nil
}

// Feasible reports whether the request fits the node, as Fit would, and
// when it does not, fills f (which may be nil) with why. Unlike Fit it
// allocates nothing, so filtering thousands of nodes creates no garbage.
func Feasible(node *Node, req *Request, f *Failure) bool {
	var e engine
	if e.place(node, req, false) {
		return true
	}
	if f != nil {
		e.failure(f)
	}
	return false
}
