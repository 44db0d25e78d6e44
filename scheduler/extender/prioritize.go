package extender

import (
	"context"
	"fmt"
	"strconv"

	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/scheduler/extenderargs"
	"github.com/tessera-gpu/tessera/scheduler/metrics"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// prioritize scores each candidate node from 0 to 10 by the pod's node
// policy, relative to the other candidates (placement.Rank), into out:
// binpack favours the busiest node, spread the emptiest. A node the pod
// does not fit scores 0. It returns the outcome to count the call under.
// args must hold a pod (call.read checks it). The answer borrows the names
// of args: it must be written before args is released.
func (e *Extender) prioritize(ctx context.Context, args *extenderargs.Args, out *priorityAnswer) (string, error) {
	out.reset()
	if !e.ready() {
		return metrics.ResultError, errNotReady
	}
	pod := args.Pod()
	req, err := e.request(pod)
	if err != nil {
		return metrics.ResultInvalid, fmt.Errorf("pod %s/%s has an invalid GPU request: %w", pod.Namespace, pod.Name, err)
	}
	names := args.Names().Borrow()
	out.hosts = append(out.hosts, names...)
	out.scores = append(out.scores, make([]int64, len(names))...)
	if len(req.Containers) == 0 {
		return metrics.ResultSuccess, nil
	}
	now, rules := e.Clock.Now(), e.rules()
	workers := e.workers()
	out.fitters = resize(out.fitters, workers)
	out.loads, out.fits = resize(out.loads, len(names)), resize(out.fits, len(names))
	e.View.ReadParallel(&out.lookup, names, pod.UID, workers, func(w, i int, n *view.Node) {
		var load float64
		ok := rules.Unavailable(n, now).OK()
		if ok {
			load, ok = out.fitters[w].Load(&n.Placement, req.Request)
		}
		out.loads[i], out.fits[i] = load, ok
	})
	placement.Rank(out.scores, out.loads, out.fits, req.NodePolicy)
	if logger := klog.FromContext(ctx).V(5); logger.Enabled() {
		logger.Info("Scored nodes", "pod", klog.KObj(pod), "policy", req.NodePolicy, "hosts", out.hosts, "scores", out.scores)
	}
	return metrics.ResultSuccess, nil
}

// priorityAnswer is the answer to one prioritize call, kept in buffers
// that the next call reuses, and written as an extenderv1.HostPriorityList.
type priorityAnswer struct {
	hosts  []string
	scores []int64
	// loads and fits are each host's load and whether the pod fits it.
	loads []float64
	fits  []bool
	// fitters, one per worker, and lookup are what scoring the nodes
	// reuses from call to call.
	fitters []placement.Fitter
	lookup  view.Lookup
}

func (a *priorityAnswer) reset() {
	a.hosts, a.scores, a.loads, a.fits = a.hosts[:0], a.scores[:0], a.loads[:0], a.fits[:0]
}

// appendJSON appends the answer as encoding/json would encode its
// extenderv1.HostPriorityList.
func (a *priorityAnswer) appendJSON(dst []byte) []byte {
	dst = append(dst, '[')
	for i, host := range a.hosts {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(append(dst, `{"Host":`...), host)
		dst = strconv.AppendInt(append(dst, `,"Score":`...), a.scores[i], 10)
		dst = append(dst, '}')
	}
	return append(dst, "]\n"...)
}
