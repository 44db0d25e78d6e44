package placement

import gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"

// engine is the scratch state of one placement. It is meant to live on the
// caller's stack.
type engine struct{}

func (e *engine) place(node *Node, req *Request) bool { return false }

func (e *engine) failure(f *Failure) { f.reset(0); f.Detail = DetailInvalidRequest }

func (e *engine) assignment() []gpuv1alpha1.ContainerAllocation { return nil }

func (e *engine) utilisation() float64 { return 0 }
