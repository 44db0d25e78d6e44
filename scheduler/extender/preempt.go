package extender

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/metrics"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/preemption"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// errNoPreemptor is the answer to ExtenderPreemptionArgs without a pod.
var errNoPreemptor = errors.New("Pod: Required value: the pod that preempts")

// Preempt checks, for every node on which kube-scheduler's preemption dry
// run found victims, whether evicting them makes room for the pod's GPU
// slices, with the placement filter uses, and keeps the nodes where it
// does, with their victims as given. The others are dropped: evicting
// there would free a GPU count (all kube-scheduler sees of GPUs) but not
// the memory, cores or share the pod needs on one GPU.
//
// The victims of a node kept are not narrowed. kube-scheduler's dry run
// gives back, most important first, every lower-priority pod whose return
// still passes its own filters, so each victim it reports is one its
// filters need gone (its count of nvidia.com/gpu, CPU, ...): a subset would
// fail those filters at the next attempt, and the pod would preempt again.
// NumPDBViolations is therefore kube-scheduler's own.
//
// The pod gets an event saying which pods would go and which GPUs that
// frees, or why no node helps. It returns the outcome to count the call
// under.
func (e *Extender) Preempt(ctx context.Context, args *extenderv1.ExtenderPreemptionArgs) (*extenderv1.ExtenderPreemptionResult, string, error) {
	pod := args.Pod
	if pod == nil {
		return nil, metrics.ResultInvalid, errNoPreemptor
	}
	if !e.ready() {
		return nil, metrics.ResultError, errNotReady
	}
	req, err := e.request(pod)
	if err != nil {
		return nil, metrics.ResultInvalid, fmt.Errorf("pod %s/%s has an invalid GPU request: %w", pod.Namespace, pod.Name, err)
	}
	candidates := metaVictims(args)
	result := &extenderv1.ExtenderPreemptionResult{NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{}}
	if len(req.Containers) == 0 {
		// Its GPUs are not what is short.
		result.NodeNameToMetaVictims = candidates
		return result, metrics.ResultSuccess, nil
	}

	names := make([]string, 0, len(candidates))
	for name, victims := range candidates {
		if victims != nil && len(victims.Pods) > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	decisions := make([]nodeDecision, len(names))
	now, rules := e.Clock.Now(), e.rules()
	q := rules.Quota(e.View, pod.Namespace, pod.UID, req.Request)
	e.View.Read(names, pod.UID, func(name string, n *view.Node) {
		i, _ := slices.BinarySearch(names, name)
		decisions[i] = decideVictims(n, now, rules, &q, req.Request, candidates[name].Pods)
	})

	// What is said names the nodes kept first.
	var said, short []string
	kept := 0
	for i, name := range names {
		d := &decisions[i]
		victims := e.victimNames(candidates[name].Pods)
		if d.containers != nil {
			result.NodeNameToMetaVictims[name] = candidates[name]
			said = append(said, preemption.DescribeEviction(name, victims, d.containers))
			kept++
			continue
		}
		short = append(short, preemption.DescribeFutileEviction(name, victims, d.why))
	}
	said = append(said, short...)
	if logger := klog.FromContext(ctx).V(2); logger.Enabled() {
		logger.Info("Checked preemption victims", "pod", klog.KObj(pod), "candidates", len(names), "kept", kept, "decisions", said)
	}
	if len(names) > 0 {
		e.notifyPreemption(pod, kept > 0, said)
	}
	if kept == 0 {
		return result, metrics.ResultUnschedulable, nil
	}
	return result, metrics.ResultSuccess, nil
}

// nodeDecision is what evicting kube-scheduler's victims on one node gives
// the preemptor: the GPUs it would get, or why it still would not fit.
type nodeDecision struct {
	containers []gpuv1alpha1.ContainerAllocation
	why        string
}

// decideVictims decides whether evicting victims from node n, in the view,
// makes room for req, by the rules' admission order. The namespace's GPU
// quota counts what it holds with the victims still there: no pod is
// evicted to make room in a quota, even one of the same namespace.
func decideVictims(n *view.Node, now time.Time, rules view.Rules, q *view.Quota, req *placement.Request, victims []*extenderv1.MetaPod) nodeDecision {
	if n == nil {
		return nodeDecision{why: "it has no GPUNode"}
	}
	if closed, _ := rules.Closed(n, now, req); !closed.OK() {
		return nodeDecision{why: string(closed)}
	}
	if closed := q.Closed(); !closed.OK() {
		return nodeDecision{why: string(closed) + ", and no pod is evicted to make room in a quota"}
	}
	gone := func(uid types.UID) bool {
		return slices.ContainsFunc(victims, func(p *extenderv1.MetaPod) bool { return p != nil && p.UID == string(uid) })
	}
	containers, failure := preemption.FitWithout(n, req, gone)
	if failure != nil {
		return nodeDecision{why: failure.Of("without them the node")}
	}
	if over := q.ExceededBy(placement.UseOf(containers, &n.Placement)); !over.OK() {
		return nodeDecision{why: string(over) + ", and no pod is evicted to make room in a quota"}
	}
	return nodeDecision{containers: containers}
}

// notifyPreemption tells the pod what preemption would do: the nodes kept,
// or why none helps.
func (e *Extender) notifyPreemption(pod *corev1.Pod, helps bool, said []string) {
	if helps {
		e.notifier.Notify(pod, corev1.EventTypeNormal, preemption.ReasonPreempting, strings.Join(said, "; "))
		return
	}
	e.notifier.Notify(pod, corev1.EventTypeWarning, preemption.ReasonNotHelpful, strings.Join(said, "; "))
}

// victimNames returns the victims as namespace/name where the view knows
// them, by UID otherwise.
func (e *Extender) victimNames(victims []*extenderv1.MetaPod) []string {
	out := make([]string, len(victims))
	for i, v := range victims {
		if v == nil {
			out[i] = "a pod with no UID"
			continue
		}
		if p, ok := e.View.Pod(types.UID(v.UID)); ok {
			out[i] = p.Namespace + "/" + p.Name
		} else {
			out[i] = "pod " + v.UID
		}
	}
	return out
}

// metaVictims returns the victims of each node by UID: kube-scheduler sends
// them so when the extender is nodeCacheCapable, and whole pods otherwise.
func metaVictims(args *extenderv1.ExtenderPreemptionArgs) map[string]*extenderv1.MetaVictims {
	if args.NodeNameToMetaVictims != nil {
		return args.NodeNameToMetaVictims
	}
	out := make(map[string]*extenderv1.MetaVictims, len(args.NodeNameToVictims))
	for name, victims := range args.NodeNameToVictims {
		if victims == nil {
			continue
		}
		meta := &extenderv1.MetaVictims{Pods: make([]*extenderv1.MetaPod, 0, len(victims.Pods)), NumPDBViolations: victims.NumPDBViolations}
		for _, p := range victims.Pods {
			if p != nil {
				meta.Pods = append(meta.Pods, &extenderv1.MetaPod{UID: string(p.UID)})
			}
		}
		out[name] = meta
	}
	return out
}
