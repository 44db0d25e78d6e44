package gatelift

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/prometheus/client_golang/prometheus"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/podrequest"
	"github.com/tessera-gpu/tessera/scheduler/tracker"
	"github.com/tessera-gpu/tessera/scheduler/view"
	"github.com/tessera-gpu/tessera/scheduler/waiters"
)

// workers lift gates at once: a free that releases many pods does not
// wait for each write in turn.
const workers = 8

// Config is what a Lifter needs.
type Config struct {
	// Kube lifts gates, tells held pods why and takes part in the election.
	Kube kubernetes.Interface
	// Pods is the informer on the profile's pods, bound ones included, as
	// viewsync keeps it.
	Pods coreinformers.PodInformer
	// View and Rules place as every front end does.
	View  *view.View
	Rules view.Rules
	// Parser reads what pods ask for.
	Parser podrequest.Parser
	// Profile is the scheduler profile whose pods are gated.
	Profile string
	// Recorder records the events that tell held pods why; nil records none.
	Recorder events.EventRecorder
	// FieldManager names the extender in what it writes.
	FieldManager string
	// Clock defaults to the real clock.
	Clock clock.WithTicker
	// Ready reports whether the view holds everything the API does: no
	// pod is judged before.
	Ready func() bool
	// LeaseNamespace and LeaseName name the Lease that elects the one
	// process that lifts gates.
	LeaseNamespace, LeaseName string
	// Registry gets the fit gate's series; nil registers none.
	Registry prometheus.Registerer
}

// Lifter lifts the fit gate of the pods it releases. It is the tracker's
// requeuer too: it hears of every free, quota freed and pod deleted.
type Lifter struct {
	cfg     Config
	pods    corelisters.PodLister
	queue   *waiters.Queue
	gate    waiters.Gate
	reasons *waiters.Reasons
	// judging has the gated pods to judge, or to judge again: those the
	// queue activates.
	judging workqueue.TypedRateLimitingInterface[cache.ObjectName]
	// lifted counts the gates lifted.
	lifted prometheus.Counter
	// synced reports whether the priorities of the pods bound have been
	// read: a pod that could preempt is not held.
	synced func() bool
	// leading is set while this process leads and its view has synced:
	// only then are pods judged and gates lifted.
	leading atomic.Bool

	mu sync.Mutex
	// cycles are the pods released, or whose cycle reached the extender,
	// since when, until the cycle ends (see cycleTimeout).
	cycles map[types.UID]time.Time
}

var (
	_ tracker.Requeue      = (*Lifter)(nil)
	_ tracker.QuotaRequeue = (*Lifter)(nil)
	_ waiters.Activator    = (*Lifter)(nil)
)

// New builds the lifter and watches the profile's gated pods; nothing is
// lifted until Run leads.
func New(cfg Config) (*Lifter, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	l := &Lifter{
		cfg:     cfg,
		pods:    cfg.Pods.Lister(),
		judging: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]()),
		cycles:  map[types.UID]time.Time{},
		lifted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tessera_fit_gate_lifted_total",
			Help: "Fit gates the extender lifted: pods released to kube-scheduler.",
		}),
	}
	l.queue = waiters.NewQueue(l, klog.Background().WithValues("component", "fit-gate"), cfg.View, cfg.Clock, cfg.Rules)
	if cfg.Registry != nil {
		if err := l.register(cfg.Registry); err != nil {
			return nil, err
		}
	}
	priorities := waiters.NewPriorities(l.queue)
	prioritiesSynced, err := cfg.Pods.Informer().AddEventHandler(priorities.Handler())
	if err != nil {
		return nil, fmt.Errorf("watching pods' priorities: %w", err)
	}
	l.synced = prioritiesSynced.HasSynced
	// Only the leader writes: reasons queued before this process lost the
	// Lease are dropped, the new leader's judgement stands.
	l.reasons = waiters.NewReasons(cfg.Kube, cfg.Recorder, cfg.Clock, func(uid types.UID) bool {
		return l.leading.Load() && l.queue.StillHeld(uid)
	}, nil, cfg.FieldManager)
	// Pods are judged only once the view has synced: kube-scheduler does
	// not ask about a gated pod, so none waits for the sync.
	l.gate = waiters.NewGate(cfg.Profile, l.queue, priorities, l.reasons, nil)
	if _, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    l.look,
		UpdateFunc: func(_, obj any) { l.look(obj) },
	}); err != nil {
		return nil, fmt.Errorf("watching gated pods: %w", err)
	}
	return l, nil
}

// look queues a gated pod to be judged, while leading: a new leader
// judges every gated pod together first (adopt). A pod it released whose
// cycle ended, as the API tells, ends its cycle here too: kube-scheduler
// may have asked another extender about it (a rollout, or the chart's
// replicas, where the fit gate's leader need not be the extender of the
// leading kube-scheduler), or turned it away before asking any.
func (l *Lifter) look(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if gated(pod) {
		if l.leading.Load() {
			l.judging.Add(cache.MetaObjectToName(pod))
		}
		return
	}
	if ended, node := cycleEnded(pod); ended && l.inCycle(pod.UID) {
		l.Ended(pod.UID, node)
	}
}

// cycleEnded reports whether a released pod's scheduling cycle has ended,
// as the API tells: bound to node, or, with node "", turned away
// (kube-scheduler marks it Unschedulable). A released pod was gated until
// then, so that its condition cannot be an earlier cycle's.
func cycleEnded(pod *corev1.Pod) (bool, string) {
	if pod.Spec.NodeName != "" {
		return true, pod.Spec.NodeName
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true, ""
		}
	}
	return false, ""
}

// gated reports whether the pod waits to be scheduled behind the fit
// gate.
func gated(pod *corev1.Pod) bool {
	return pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil && !tracker.PodDone(pod) &&
		slices.ContainsFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == gpuv1alpha1.FitSchedulingGate })
}

// Activate has the pods judged again: those the queue released now pass.
func (l *Lifter) Activate(_ klog.Logger, pods map[string]*corev1.Pod) {
	for _, pod := range pods {
		l.judging.Add(cache.MetaObjectToName(pod))
	}
}

// work judges the queued pods and lifts the gates of those let by, until
// the queue shuts down. Pods queued while this process does not lead are
// dropped: a new leader judges every gated pod.
func (l *Lifter) work(ctx context.Context) {
	for {
		key, quit := l.judging.Get()
		if quit {
			return
		}
		if !l.leading.Load() {
			l.judging.Forget(key)
		} else if err := l.sync(ctx, key); err != nil {
			klog.FromContext(ctx).V(2).Info("Lifting a fit gate failed; retrying", "pod", key, "err", err)
			l.judging.AddRateLimited(key)
		} else {
			l.judging.Forget(key)
		}
		l.judging.Done(key)
	}
}

// sync judges the pod, if it is gated still, and lifts its gate when the
// gate lets it by.
func (l *Lifter) sync(ctx context.Context, key cache.ObjectName) error {
	pod, err := l.pods.Pods(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !gated(pod) || !l.judge(pod) {
		return nil
	}
	// Its cycle is noted before the gate is lifted: the pod may be bound
	// before the lift's answer comes back. A pod judged again on a copy
	// that had not yet heard of its lift keeps the cycle it has.
	l.mu.Lock()
	_, lifted := l.cycles[pod.UID]
	if !lifted {
		l.cycles[pod.UID] = l.cfg.Clock.Now()
	}
	l.mu.Unlock()
	if err := l.lift(ctx, pod); err != nil {
		if !lifted {
			l.mu.Lock()
			delete(l.cycles, pod.UID)
			l.mu.Unlock()
		}
		return err
	}
	return nil
}

// judge reports whether the gate lets the pod by: a pod whose wait is not
// for GPUs to free, or whose GPUs some node has now and the pods ahead of
// it leave it (waiters.Gate).
func (l *Lifter) judge(pod *corev1.Pod) bool {
	if l.gate.Passes(pod) || pod.Annotations[gpuv1alpha1.GangHoldAnnotation] != "" {
		return true
	}
	req, err := l.cfg.Parser.Parse(pod)
	if err != nil || len(req.Containers) == 0 {
		return true
	}
	if _, holding := l.cfg.View.Pod(pod.UID); holding || l.gate.CouldPreempt(pod) {
		return true
	}
	held, _ := l.gate.Judge(pod, req.Request, l.cfg.Rules, l.cfg.View)
	return !held
}

// lift takes the fit gate off the pod, if this version of it still has
// it there.
func (l *Lifter) lift(ctx context.Context, pod *corev1.Pod) error {
	i := slices.IndexFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == gpuv1alpha1.FitSchedulingGate })
	if i < 0 {
		return nil
	}
	// The tests make the patch fail on another pod of the same name, and
	// on gates that changed since this version.
	patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/uid","value":%q},{"op":"test","path":"/spec/schedulingGates/%d/name","value":%q},{"op":"remove","path":"/spec/schedulingGates/%d"}]`,
		pod.UID, i, gpuv1alpha1.FitSchedulingGate, i)
	_, err := l.cfg.Kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.JSONPatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: l.cfg.FieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("lifting the fit gate of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	l.lifted.Inc()
	klog.FromContext(ctx).V(4).Info("Lifted the fit gate", "pod", klog.KObj(pod))
	return nil
}
