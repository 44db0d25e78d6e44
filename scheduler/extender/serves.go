package extender

import (
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// serves returns whether a node, as the view holds it when asked, could
// take a request filter turned away everywhere, by filter's rules: the
// requeuer pokes the pod only when GPUs freed on such a node. ft is
// scratch memory the caller lends.
func (e *Extender) serves(req *placement.Request) func(ft *placement.Fitter, node string) bool {
	return func(ft *placement.Fitter, node string) bool {
		fits := false
		now := e.Clock.Now()
		e.View.Read([]string{node}, "", func(_ string, n *view.Node) {
			if closed, _ := e.rules().Closed(n, now, req); !closed.OK() {
				return
			}
			fits = ft.Feasible(&n.Placement, req, nil)
		})
		return fits
	}
}
