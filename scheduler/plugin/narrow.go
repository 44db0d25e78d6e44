package plugin

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/podrequest"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// narrowedNodes is the most nodes a narrowed cycle gets. kube-scheduler
// runs its own filters and scores on every node it is given (at least 100
// feasible ones, at 1,000 nodes 420), most of its CPU per pod; the best
// few by the node policy are those Tessera's score would rank first, and
// a few more leave kube-scheduler's scores a choice among them.
const narrowedNodes = 16

// postFilterSkipper is kube-scheduler's CycleState, which can skip the
// PostFilter plugins of a cycle.
type postFilterSkipper interface {
	SetSkipAllPostFilterPlugins(bool)
}

// narrower keeps what narrowing reuses from cycle to cycle; kube-scheduler
// runs one PreFilter at a time, the mutex guards against more.
type narrower struct {
	mu      sync.Mutex
	lookup  view.Lookup
	names   []string
	loads   []float64
	fits    []bool
	order   []int
	fitters []placement.Fitter
}

// narrow returns the nodes where the pod fits now, as Tessera's view holds
// them, the best narrowedNodes by the pod's node policy, so that
// kube-scheduler filters and scores only those; nil (every node) when none
// fits, so that preemption looks at every node as before.
//
// kube-scheduler gives the nodes left out UnschedulableAndUnresolvable, so
// preemption would evict only on the few if they all failed (another
// plugin turns them away, or a nominated pod takes the room): a narrowed
// cycle therefore skips PostFilter, and the pod, activated while it runs,
// is retried at once when the cycle fails, then always with every node
// (requeuer.waiting). Nodes whose taints, unschedulable mark or required
// node affinity turn the pod away are passed by, as kube-scheduler's
// filters would.
func (p *Plugin) narrow(ctx context.Context, state fwk.CycleState, pod *v1.Pod, req podrequest.Request, nodes []fwk.NodeInfo) *fwk.PreFilterResult {
	skipper, ok := state.(postFilterSkipper)
	if !ok || len(nodes) <= narrowedNodes {
		return nil
	}
	nw := &p.narrower
	nw.mu.Lock()
	defer nw.mu.Unlock()
	nw.names = nw.names[:0]
	for _, ni := range nodes {
		nw.names = append(nw.names, ni.Node().Name)
	}
	nw.loads, nw.fits = lengthen(nw.loads, len(nodes)), lengthen(nw.fits, len(nodes))
	workers := runtime.GOMAXPROCS(0)
	nw.fitters = lengthen(nw.fitters, workers)
	now := p.clock.Now()
	p.view.ReadParallel(&nw.lookup, nw.names, pod.UID, workers, func(w, i int, n *view.Node) {
		nw.fits[i] = false
		if n == nil || p.rules.closed(n, now, req.Request) != "" {
			return
		}
		nw.loads[i], nw.fits[i] = nw.fitters[w].Load(&n.Placement, req.Request)
	})
	nw.order = nw.order[:0]
	for i, fits := range nw.fits {
		if fits {
			nw.order = append(nw.order, i)
		}
	}
	if len(nw.order) == 0 {
		return nil
	}
	// Binpack ranks the busiest first, spread the emptiest, as placement.Rank.
	slices.SortStableFunc(nw.order, func(a, b int) int {
		if req.NodePolicy == gpurequest.Spread {
			return cmp.Compare(nw.loads[a], nw.loads[b])
		}
		return cmp.Compare(nw.loads[b], nw.loads[a])
	})
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	logger := klog.FromContext(ctx)
	chosen := sets.New[string]()
	for _, i := range nw.order {
		if node := nodes[i].Node(); admits(logger, pod, affinity, node) {
			chosen.Insert(node.Name)
			if chosen.Len() == narrowedNodes {
				break
			}
		}
	}
	if chosen.Len() == 0 {
		return nil
	}
	skipper.SetSkipAllPostFilterPlugins(true)
	p.requeue.narrowing(pod)
	if logger := logger.V(5); logger.Enabled() {
		logger.Info("Narrowed the nodes to those that fit the pod's GPUs", "pod", klog.KObj(pod), "fit", len(nw.order), "nodes", chosen.Len())
	}
	return &fwk.PreFilterResult{NodeNames: chosen}
}

// admits reports whether kube-scheduler's filters of a node's taints,
// unschedulable mark and the pod's required node affinity let the pod on
// the node.
func admits(logger klog.Logger, pod *v1.Pod, affinity nodeaffinity.RequiredNodeAffinity, node *v1.Node) bool {
	// The taint kube-scheduler's NodeUnschedulable checks a cordoned node with.
	unschedulable := v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}
	if node.Spec.Unschedulable && !corev1helpers.TolerationsTolerateTaint(logger, pod.Spec.Tolerations, &unschedulable, false) {
		return false
	}
	if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, pod.Spec.Tolerations, func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	}, false); untolerated {
		return false
	}
	match, err := affinity.Match(node)
	return err == nil && match
}

// lengthen returns s with length n, reusing its memory.
func lengthen[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
