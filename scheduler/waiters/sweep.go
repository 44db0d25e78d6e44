package waiters

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// sweepEvery is how often Sweep plays the nodes that could hold a held
// pod.
const sweepEvery = 10 * time.Second

// Sweep plays, every sweepEvery until ctx ends, the nodes that could hold
// a held pod's request now (see sweep).
func (r *Queue) Sweep(ctx context.Context) {
	wait.UntilWithContext(ctx, func(context.Context) { r.sweep() }, sweepEvery)
}

// sweep plays each node that could hold a held pod's request now, as the
// index has it, and activates the pods the node serves, in queue order.
// Each free plays its node as the view gets it, so a sweep releases no
// held pod unless a free's play missed it; it bounds how long a held pod
// waits for such room by sweepEvery, where it would wait for the next
// free of a node that fits it, and says so in the log. Room the index
// missed too is in it once it finds the shape's nodes anew
// (fitgate.RebuildAfter).
func (r *Queue) sweep() {
	r.mu.Lock()
	if r.holding == 0 {
		r.mu.Unlock()
		return
	}
	// The shapes of the held pods, each once.
	held := map[*shape]bool{}
	var shapes []*shape
	for _, w := range r.pods {
		if w.held && !held[w.shape] {
			held[w.shape] = true
			shapes = append(shapes, w.shape)
		}
	}
	holding := r.holding
	chosen := r.playFitting(shapes)
	released := holding - r.holding
	r.mu.Unlock()
	if released > 0 {
		r.logger.V(2).Info("A sweep released held pods that GPUs free now could hold and no free's play had released", "pods", released)
	}
	r.activate("Sweep: retrying the pods that GPUs free now can hold", chosen)
}

// playFitting plays every node that could hold a pod of the shapes now,
// as the index has it, and returns the pods the plays chose. It runs
// under r.mu.
func (r *Queue) playFitting(shapes []*shape) []*v1.Pod {
	nodes := map[string]bool{}
	for _, s := range shapes {
		r.index.EachFit(s.key, s.req, func(node string) bool {
			nodes[node] = true
			return true
		})
	}
	var chosen []*v1.Pod
	for node := range nodes {
		chosen = append(chosen, r.play(node, "")...)
	}
	return chosen
}
