package extender

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/scheduler/extenderargs"
	"github.com/tessera-gpu/tessera/scheduler/metrics"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// filter decides for every candidate node whether the pod's GPU request
// fits it, and for every other node why not, into out. Nodes that cannot
// fit the pod even with every GPU free, or that take no GPU pods at all,
// are unresolvable. It returns the outcome to count the call under. args
// must hold a pod (call.read checks it). The answer borrows the names of
// args: it must be written before args is released.
func (e *Extender) filter(ctx context.Context, args *extenderargs.Args, out *filterAnswer) string {
	out.reset()
	if !e.ready() {
		out.err = errNotReady.Error()
		return metrics.ResultError
	}
	names := args.Names().Borrow()
	pod := args.Pod()
	req, err := e.request(pod)
	if err != nil {
		out.err = fmt.Sprintf("pod %s/%s has an invalid GPU request: %v", pod.Namespace, pod.Name, err)
		return metrics.ResultInvalid
	}

	if refusal := podGroupRefusal(pod); refusal != "" && len(req.Containers) > 0 {
		for _, name := range names {
			out.unresolvable = append(out.unresolvable, nodeReason{name, refusal})
		}
		if nodes := args.Nodes(); nodes != nil {
			out.nodes = filterNodeList(nodes, nil)
		}
		return metrics.ResultUnschedulable
	}
	var j *judge
	if len(req.Containers) == 0 {
		// Nothing to place: every node fits.
		out.feasible = append(out.feasible, names...)
	} else {
		if e.FitGate != nil {
			e.FitGate.Started(pod, req.Request)
		}
		e.View.JoinGang(pod)
		j = e.judge(pod, req.Request)
		e.decideAll(j, pod, names, out)
	}
	if nodes := args.Nodes(); nodes != nil {
		// A scheduler that is not node-cache capable expects whole nodes back.
		out.nodes = filterNodeList(nodes, out.feasible)
	}
	if logger := klog.FromContext(ctx).V(4); logger.Enabled() {
		logger.Info("Filtered nodes", "pod", klog.KObj(pod), "candidates", len(names),
			"feasible", len(out.feasible), "failed", len(out.failed), "unresolvable", len(out.unresolvable))
	}
	if len(out.feasible) == 0 {
		if e.FitGate != nil {
			e.FitGate.Ended(pod.UID, "")
		}
		if e.Requeue != nil {
			e.Requeue.Rejected(pod, e.serves(pod, req.Request))
		}
		if j != nil && j.turnedAway.Any && e.QuotaRequeue != nil {
			e.QuotaRequeue.OverQuota(pod, j.now, e.admits(pod, req.Request, j.turnedAway.Asked))
		}
		e.tellNoPreemption(pod, req, out.failed)
		return metrics.ResultUnschedulable
	}
	return metrics.ResultSuccess
}

// decideAll decides every named node for the pod by j, each run of them
// on a worker of its own, and gathers the parts into out in the order of
// the runs, and into j what the quota turned away.
func (e *Extender) decideAll(j *judge, pod *corev1.Pod, names []string, out *filterAnswer) {
	workers := e.workers()
	out.parts = resize(out.parts, workers)
	for w := range out.parts {
		out.parts[w].reset()
	}
	e.View.ReadParallel(&out.lookup, names, pod.UID, workers, func(w, i int, n *view.Node) {
		j.decide(&out.parts[w], names[i], n)
	})
	for w := range out.parts {
		part := &out.parts[w]
		out.feasible = append(out.feasible, part.feasible...)
		out.failed = append(out.failed, part.failed...)
		out.unresolvable = append(out.unresolvable, part.unresolvable...)
		if part.turnedAway.Any {
			j.turnedAway.Add(part.turnedAway.Asked)
		}
	}
}

// filterAnswer is the answer to one filter call, kept in buffers that the
// next call reuses, and written as an extenderv1.ExtenderFilterResult.
type filterAnswer struct {
	// err is why the call could not be decided; the rest is then empty.
	err      string
	feasible []string
	// failed and unresolvable are FailedNodes and FailedAndUnresolvableNodes.
	failed, unresolvable []nodeReason
	// nodes, for a scheduler that sent whole nodes, are the feasible ones.
	nodes *corev1.NodeList
	// parts are what each worker decided for its run of the nodes, gathered
	// into the lists above in the order of the runs.
	parts []filterPart
	// lookup is what finding the nodes reuses from call to call.
	lookup view.Lookup
}

// filterPart is what one worker of a filter call decided, for one run of
// the nodes.
type filterPart struct {
	feasible             []string
	failed, unresolvable []nodeReason
	// reasons words each distinct failure once per call: thousands of
	// nodes fail for a handful of reasons.
	reasons map[placement.Failure]string
	// turnedAway is what the namespace's GPU quota turned away.
	turnedAway view.TurnedAway
	// fitter and failure are what deciding a node reuses.
	fitter  placement.Fitter
	failure placement.Failure
}

// nodeReason is a node that does not fit, and why.
type nodeReason struct{ node, reason string }

func (a *filterAnswer) reset() {
	a.err, a.nodes = "", nil
	a.feasible, a.failed, a.unresolvable = a.feasible[:0], a.failed[:0], a.unresolvable[:0]
}

func (p *filterPart) reset() {
	p.feasible, p.failed, p.unresolvable = p.feasible[:0], p.failed[:0], p.unresolvable[:0]
	p.turnedAway = view.TurnedAway{}
	if p.reasons == nil {
		p.reasons = map[placement.Failure]string{}
	}
	clear(p.reasons)
}

// reason words f, once per distinct failure.
func (p *filterPart) reason(f *placement.Failure) string {
	r, ok := p.reasons[*f]
	if !ok {
		r = f.Error()
		p.reasons[*f] = r
	}
	return r
}

// appendJSON appends the answer as encoding/json would encode its
// extenderv1.ExtenderFilterResult, up to the order of map keys.
func (a *filterAnswer) appendJSON(dst []byte) ([]byte, error) {
	if a.err != "" {
		dst = append(dst, `{"Nodes":null,"NodeNames":null,"FailedNodes":null,"FailedAndUnresolvableNodes":null,"Error":`...)
		return append(appendString(dst, a.err), "}\n"...), nil
	}
	dst = append(dst, `{"Nodes":`...)
	if a.nodes != nil {
		nodes, err := json.Marshal(a.nodes)
		if err != nil {
			return dst, fmt.Errorf("encoding the feasible nodes: %w", err)
		}
		dst = append(dst, nodes...)
		dst = append(dst, `,"NodeNames":null`...)
	} else {
		dst = append(dst, `null,"NodeNames":[`...)
		for i, name := range a.feasible {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, name)
		}
		dst = append(dst, ']')
	}
	dst = appendReasons(append(dst, `,"FailedNodes":`...), a.failed)
	dst = appendReasons(append(dst, `,"FailedAndUnresolvableNodes":`...), a.unresolvable)
	return append(dst, `,"Error":""}`+"\n"...), nil
}

// appendReasons appends nodes as a JSON object from node name to reason.
func appendReasons(dst []byte, nodes []nodeReason) []byte {
	dst = append(dst, '{')
	for i, n := range nodes {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(appendString(dst, n.node), ':')
		dst = appendString(dst, n.reason)
	}
	return append(dst, '}')
}
