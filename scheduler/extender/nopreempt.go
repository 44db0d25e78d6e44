package extender

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/podrequest"
	"github.com/tessera-gpu/tessera/scheduler/preemption"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// maxPreemptionNodes is the most nodes that did not fit a pod that
// tellNoPreemption looks at.
const maxPreemptionNodes = 64

// tellNoPreemption, after a filter fitted the pod on no node, tells the
// pod what preemption would have to do for it, which kube-scheduler will
// not do in extender mode: its preemption re-runs only its own filters,
// which know GPUs only as the nvidia.com/gpu count, so it finds no victims
// when memory, cores or shares are short (docs/preemption.md, "Extender
// mode"). The pod hears which lower-priority pods on which node would have
// to go, on the node needing the fewest, chosen by priority and then name
// (preemption.Fewest) with no regard to PodDisruptionBudgets, so plugin
// mode's preemption may choose others; or that evicting all of them would
// still not make room. Nothing is said for a pod that
// may not preempt or that no lower-priority GPU pod stands in the way of,
// nor more than once per Notifier repeat: the work is spared then.
func (e *Extender) tellNoPreemption(pod *corev1.Pod, req podrequest.Request, failed []nodeReason) {
	if e.Pods == nil || len(failed) == 0 || e.notifier.Said(pod.UID) ||
		(pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == corev1.PreemptNever) {
		return
	}
	priority := preemption.Priority(pod)
	var best *preemptionPlan
	var short []string
	for _, f := range failed[:min(len(failed), maxPreemptionNodes)] {
		lower := e.lowerPriorityPods(f.node, pod.UID, priority)
		if len(lower) == 0 {
			continue
		}
		uids := make([]types.UID, len(lower))
		for i, p := range lower {
			uids[i] = p.uid
		}
		e.View.Read([]string{f.node}, pod.UID, func(name string, n *view.Node) {
			if n == nil {
				return
			}
			victims, containers, failure := preemption.Fewest(n, req.Request, uids)
			if failure != nil {
				short = append(short, preemption.DescribeFutileEviction(name, namesOf(lower, nil), failure.Of("without them the node")))
				return
			}
			if best == nil || len(victims) < len(best.victims) {
				best = &preemptionPlan{node: name, victims: namesOf(lower, victims), containers: containers}
			}
		})
	}
	switch {
	case best != nil:
		e.notifier.Notify(pod, corev1.EventTypeWarning, preemption.ReasonNotHelpful, fmt.Sprintf(
			"%s, but kube-scheduler does not preempt for GPU memory, cores or shares in extender mode (it counts GPUs only as %s); plugin mode does",
			preemption.DescribeEviction(best.node, best.victims, best.containers), e.ResourceNames.Count))
	case len(short) > 0:
		e.notifier.Notify(pod, corev1.EventTypeWarning, preemption.ReasonNotHelpful, short[0])
	}
}

// preemptionPlan is what preemption would have to evict on one node.
type preemptionPlan struct {
	node       string
	victims    []string
	containers []gpuv1alpha1.ContainerAllocation
}

// lowerPod is a pod holding GPUs on a node, below the preemptor's priority.
type lowerPod struct {
	uid             types.UID
	namespace, name string
	priority        int32
}

func (p *lowerPod) key() string { return p.namespace + "/" + p.name }

// lowerPriorityPods returns the pods holding GPUs on the node whose
// priority is below priority, least important first (lowest priority,
// then name).
func (e *Extender) lowerPriorityPods(node string, preemptor types.UID, priority int32) []lowerPod {
	var held []lowerPod
	e.View.Read([]string{node}, preemptor, func(_ string, n *view.Node) {
		if n == nil {
			return
		}
		n.EachPod(func(p *view.Pod) {
			held = append(held, lowerPod{uid: p.UID, namespace: p.Namespace, name: p.Name})
		})
	})
	lower := held[:0]
	for _, p := range held {
		got, err := e.Pods.Pods(p.namespace).Get(p.name)
		if err != nil || got.UID != p.uid {
			continue
		}
		if p.priority = preemption.Priority(got); p.priority < priority {
			lower = append(lower, p)
		}
	}
	slices.SortFunc(lower, func(a, b lowerPod) int {
		return cmp.Or(cmp.Compare(a.priority, b.priority), cmp.Compare(a.key(), b.key()))
	})
	return lower
}

// namesOf returns the names of the pods, of only those whose UIDs are in
// uids unless uids is nil.
func namesOf(pods []lowerPod, uids []types.UID) []string {
	var out []string
	for i := range pods {
		p := &pods[i]
		if uids == nil || slices.Contains(uids, p.uid) {
			out = append(out, p.key())
		}
	}
	return out
}
