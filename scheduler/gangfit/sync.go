package gangfit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// sync decides the check of one Workload and keeps its held room in step:
// a Workload whose check is Pending is decided; the room of one whose
// check is Ready is held until its pods are placed or the hold times out;
// any other room is released.
func (c *Controller) sync(ctx context.Context, key string) error {
	obj, exists, err := c.workloads.GetIndexer().GetByKey(key)
	if err != nil {
		return err
	}
	if !exists {
		c.release(key)
		c.stopWaiting(key)
		return nil
	}
	var w workload
	if err := fromUnstructured(obj, &w); err != nil {
		return err
	}
	st, ok := c.ourCheck(&w)
	if !ok || w.condition(conditionFinished) || !w.condition(conditionQuotaReserved) || w.condition(conditionEvicted) {
		// Not ours, done, or being sent back to the queue, where Kueue
		// resets the check: nothing to hold, and nothing to decide.
		c.release(key)
		return nil
	}
	switch st.State {
	case statePending:
		c.release(key)
		if !c.leading.Load() {
			// The leader decides; requeueAll brings the Workload back
			// here if this process becomes it.
			return nil
		}
		return c.decide(ctx, key, &w, st)
	case stateReady:
		return c.keep(ctx, key, &w, st)
	case stateRetry:
		c.release(key)
		if !c.leading.Load() {
			return nil
		}
		if !c.isWaiting(key) {
			// Sent back by the leader before this process led.
			c.wait(key, st.LastTransitionTime.Time)
		}
		return c.retryIfFits(ctx, key, &w, st)
	default:
		c.release(key)
		return nil
	}
}

// ourCheck returns the state on the Workload of an AdmissionCheck that the
// gang-fit controller serves.
func (c *Controller) ourCheck(w *workload) (checkState, bool) {
	for _, st := range w.Status.AdmissionChecks {
		obj, exists, err := c.checks.GetIndexer().GetByKey(st.Name)
		if err != nil || !exists {
			continue
		}
		var ac admissionCheck
		if fromUnstructured(obj, &ac) == nil && ac.Spec.ControllerName == gpuv1alpha1.GangFitControllerName {
			return st, true
		}
	}
	return checkState{}, false
}

// decide holds the room of every pod of the Workload and sets the check
// Ready, telling Kueue to give each pod set's pods the key of their room;
// or, when they do not all fit, sets it Retry. Only a request invalid in
// itself is Rejected, which makes Kueue deactivate the Workload: a pod
// that fits no node even with every GPU free may fit one missing for now
// (a node pool scaled to zero, a node replaced in an upgrade), so it is
// tried again as any other.
func (c *Controller) decide(ctx context.Context, key string, w *workload, st checkState) error {
	logger := klog.FromContext(ctx)
	now := c.cfg.Clock.Now()
	h, err := c.hold(w, func(ps *podSet) int32 { return w.count(ps) }, now)
	if err != nil {
		next := checkState{Name: st.Name, State: stateRetry, Message: err.Error()}
		if invalid := (*invalidError)(nil); errors.As(err, &invalid) {
			next.State = stateRejected
		} else {
			seconds := int32(c.cfg.RetryAfter / time.Second)
			next.RequeueAfterSeconds = &seconds
			next.Message += fmt.Sprintf("; Kueue tries again in %s", c.cfg.RetryAfter)
		}
		logger.V(2).Info("Workload's pods do not all fit the GPUs", "workload", key, "state", next.State, "reason", err)
		if err := c.setState(ctx, w, next); err != nil {
			return err
		}
		if next.State == stateRetry {
			c.wait(key, now)
		}
		return nil
	}
	return c.admit(ctx, key, w, st, h, now)
}

// admit sets the check Ready for the room h holds, telling Kueue to give
// each pod set's pods the key of their room; on failure the room is
// released.
func (c *Controller) admit(ctx context.Context, key string, w *workload, st checkState, h *holding, now time.Time) error {
	h.until = now.Add(c.cfg.HoldTimeout)
	next := checkState{Name: st.Name, State: stateReady, Message: h.describe(c.cfg.View, h.until)}
	for i := range w.Spec.PodSets {
		ps := &w.Spec.PodSets[i]
		next.PodSetUpdates = append(next.PodSetUpdates, podSetUpdate{
			Name: ps.Name, Annotations: map[string]string{gpuv1alpha1.GangHoldAnnotation: gangKey(w, ps)},
		})
	}
	if err := c.setState(ctx, w, next); err != nil {
		c.free(h)
		return err
	}
	c.remember(key, h)
	c.stopWaiting(key)
	klog.FromContext(ctx).V(2).Info("Workload's pods fit the GPUs; their room is held", "workload", key, "until", h.until)
	return nil
}

// keep holds the room of an admitted Workload until its pods are all
// placed or the hold times out.
func (c *Controller) keep(ctx context.Context, key string, w *workload, st checkState) error {
	now := c.cfg.Clock.Now()
	c.mu.Lock()
	h, ok := c.held[key]
	c.mu.Unlock()
	if ok && h.uid != w.UID {
		c.release(key)
		ok = false
	}
	if !ok {
		// This process did not hold the room: it started since the check
		// went Ready.
		h = c.holdAgain(ctx, key, w, st.LastTransitionTime.Add(c.cfg.HoldTimeout), now)
	}
	if !now.Before(h.until) || c.allPlaced(h) {
		// The entry stays, without room, so the room is not held again.
		if len(h.gangs) > 0 {
			c.free(h)
			c.roomFreed()
		}
		return nil
	}
	c.queue.AddAfter(key, h.until.Sub(now))
	return nil
}

// holdAgain holds, after a restart, the room of an admitted Workload's
// pods not yet placed, where they fit now, until the hold made before
// times out.
func (c *Controller) holdAgain(ctx context.Context, key string, w *workload, until, now time.Time) *holding {
	h := &holding{uid: w.UID, namespace: w.Namespace}
	if now.Before(until) {
		placed := c.placed(w)
		held, err := c.hold(w, func(ps *podSet) int32 { return max(0, w.count(ps)-placed[gangKey(w, ps)]) }, now)
		if err != nil {
			// The GPUs changed while no scheduler held the room: the pods
			// compete for GPUs as any pod.
			klog.FromContext(ctx).Info("Could not hold an admitted Workload's room again", "workload", key, "reason", err)
		} else {
			h = held
		}
	}
	h.until = until
	c.remember(key, h)
	return h
}

// remember records the room held for a Workload.
func (c *Controller) remember(key string, h *holding) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held[key] = h
}

// allPlaced reports whether every pod the holding held room for is placed.
func (c *Controller) allPlaced(h *holding) bool {
	for _, gang := range h.gangs {
		if c.cfg.View.GangHeld(gang) > 0 {
			return false
		}
	}
	return true
}

// invalidError is a pod set whose GPU request is invalid: its pods can
// never be placed.
type invalidError struct {
	podSet string
	err    error
}

func (e *invalidError) Error() string {
	return fmt.Sprintf("pod set %s has an invalid GPU request: %v", e.podSet, e.err)
}

// hold holds the room of count(ps) pods of every pod set of the Workload
// that asks for GPUs, all or none.
func (c *Controller) hold(w *workload, count func(ps *podSet) int32, now time.Time) (*holding, error) {
	h := &holding{uid: w.UID, namespace: w.Namespace}
	limits := c.cfg.Rules.Limits(w.Namespace)
	for i := range w.Spec.PodSets {
		ps := &w.Spec.PodSets[i]
		pod := &corev1.Pod{ObjectMeta: *ps.Template.ObjectMeta.DeepCopy(), Spec: ps.Template.Spec}
		pod.Namespace = w.Namespace
		req, err := c.cfg.Parser.Parse(pod)
		if err != nil {
			c.free(h)
			return nil, &invalidError{podSet: ps.Name, err: err}
		}
		n := count(ps)
		if len(req.Containers) == 0 || n == 0 {
			continue
		}
		eligible, err := c.eligible(w, ps, pod)
		if err != nil {
			c.free(h)
			return nil, err
		}
		members := make([]view.GangMember, n)
		for j := range members {
			members[j] = view.GangMember{Request: req.Request, Policy: req.NodePolicy, Eligible: eligible}
		}
		key := gangKey(w, ps)
		if _, err := c.cfg.View.HoldGang(key, w.Namespace, w.Name, w.owners(), members, c.cfg.Rules, limits, now); err != nil {
			c.free(h)
			return nil, fmt.Errorf("pod set %s of %d pods: %w", ps.Name, n, err)
		}
		h.gangs = append(h.gangs, key)
	}
	return h, nil
}

// placed counts, by gang key, the Workload's pods already placed on a
// node, running or done: a pod that failed may be replaced, and its
// replacement needs room.
func (c *Controller) placed(w *workload) map[string]int32 {
	out := map[string]int32{}
	pods, err := c.cfg.Pods.Pods(w.Namespace).List(labels.Everything())
	if err != nil {
		return out
	}
	prefix := string(w.UID) + "/"
	for _, p := range pods {
		key := p.Annotations[gpuv1alpha1.GangHoldAnnotation]
		if strings.HasPrefix(key, prefix) && p.Spec.NodeName != "" && p.Status.Phase != corev1.PodFailed {
			out[key]++
		}
	}
	return out
}

// describe says where the room is held and until when, for the check's
// message.
func (h *holding) describe(v *view.View, until time.Time) string {
	total := 0
	for _, gang := range h.gangs {
		total += v.GangHeld(gang)
	}
	if total == 0 {
		return "no pod asks for GPUs"
	}
	return fmt.Sprintf("all %d GPU pods fit the GPUs as they are; their room is held until %s", total, until.UTC().Format(time.RFC3339))
}
