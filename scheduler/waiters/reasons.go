package waiters

import (
	"context"
	"encoding/json"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

const (
	// heldReasonsPerSecond bounds the writes that tell held pods why they
	// wait: a burst of thousands of pods held at once is told over
	// seconds, not in one storm of writes.
	heldReasonsPerSecond = 50
	// busyHeldReasonsPerSecond bounds them while pods are placed (see
	// Placing): each pod told is two writes, its condition and its
	// event, and under a backlog thousands of held pods wait to be told
	// while frees wait on the same API server to be taken.
	busyHeldReasonsPerSecond = 5
)

// Reasons tells held pods why they wait, as kube-scheduler tells the
// pods it turns away: a PodScheduled condition that is False with reason
// Unschedulable (SchedulingGated for a gated pod), and a FailedScheduling
// event. It writes from a goroutine of its own, since the fit gate runs
// under kube-scheduler's queue lock, at most heldReasonsPerSecond pods a
// second (busyHeldReasonsPerSecond while pods are placed); a pod told
// twice before its turn is told the latest reason once, and a pod the
// gate no longer holds at its turn is told nothing: it is being
// scheduled, or bound already, and a late write would mark a bound pod
// unschedulable.
type Reasons struct {
	kube     kubernetes.Interface
	recorder events.EventRecorder
	clock    clock.PassiveClock
	// fieldManager names the scheduler in what it writes.
	fieldManager string
	pace         *Pace
	queue        workqueue.TypedInterface[types.UID]
	// held reports whether the fit gate holds the pod now.
	held func(types.UID) bool

	mu      sync.Mutex
	pending map[types.UID]reason
}

// reason is what one pod is to be told.
type reason struct {
	pod *v1.Pod
	why string
}

// NewReasons tells held pods why with kube, writing as fieldManager, and
// records events with recorder (nil records none); held reports whether
// the fit gate holds a pod still, and placing whether pods are placed
// (nil: never).
func NewReasons(kube kubernetes.Interface, recorder events.EventRecorder, clk clock.PassiveClock, held func(types.UID) bool, placing *Placing, fieldManager string) *Reasons {
	return &Reasons{
		fieldManager: fieldManager,
		kube:         kube,
		recorder:     recorder,
		clock:        clk,
		held:         held,
		pace:         NewPace(placing, heldReasonsPerSecond, busyHeldReasonsPerSecond),
		queue:        workqueue.NewTyped[types.UID](),
		pending:      map[types.UID]reason{},
	}
}

// Tell queues telling the pod why, unless its condition says so already.
func (h *Reasons) Tell(pod *v1.Pod, why string) {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Message == why {
			return
		}
	}
	h.mu.Lock()
	h.pending[pod.UID] = reason{pod: pod, why: why}
	h.mu.Unlock()
	h.queue.Add(pod.UID)
}

// Run tells the pods queued until ctx ends.
func (h *Reasons) Run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		h.queue.ShutDown()
	}()
	for {
		uid, quit := h.queue.Get()
		if quit {
			return
		}
		h.mu.Lock()
		r, ok := h.pending[uid]
		delete(h.pending, uid)
		h.mu.Unlock()
		if ok && h.held(uid) && h.pace.Wait(ctx) == nil {
			h.write(ctx, r)
		}
		h.queue.Done(uid)
	}
}

// write sets the pod's condition and records the event.
func (h *Reasons) write(ctx context.Context, r reason) {
	patch, err := json.Marshal(map[string]any{
		// The UID makes the patch fail on another pod of the same name.
		"metadata": map[string]any{"uid": r.pod.UID},
		"status": map[string]any{"conditions": []v1.PodCondition{{
			Type:               v1.PodScheduled,
			Status:             v1.ConditionFalse,
			Reason:             conditionReason(r.pod),
			Message:            r.why,
			LastTransitionTime: metav1.NewTime(h.clock.Now()),
		}}},
	})
	if err != nil {
		return
	}
	_, err = h.kube.CoreV1().Pods(r.pod.Namespace).Patch(ctx, r.pod.Name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{FieldManager: h.fieldManager}, "status")
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err), apierrors.IsInvalid(err):
		// Gone, or another pod of that name.
		return
	case err != nil:
		klog.FromContext(ctx).V(2).Info("Telling a held pod why it waits failed", "pod", klog.KObj(r.pod), "err", err)
		return
	}
	if h.recorder != nil {
		h.recorder.Eventf(r.pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "%s", r.why)
	}
}

// conditionReason is the reason of a held pod's PodScheduled condition:
// SchedulingGated for a pod kube-scheduler does not try while it has a
// scheduling gate (the extender's fit gate), as the API server wrote it,
// and Unschedulable for others.
func conditionReason(pod *v1.Pod) string {
	if len(pod.Spec.SchedulingGates) > 0 {
		return v1.PodReasonSchedulingGated
	}
	return v1.PodReasonUnschedulable
}
