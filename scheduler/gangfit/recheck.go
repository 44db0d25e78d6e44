package gangfit

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Freed is the tracker telling that GPUs may have freed on a node: the
// Workloads sent back to Kueue's queue may fit now.
func (c *Controller) Freed(string) { c.roomFreed() }

// Forget is the tracker telling that a pod is gone; its GPUs come with
// Freed.
func (c *Controller) Forget(types.UID) {}

// roomFreed wakes recheck; a burst of frees while it works wakes it once.
func (c *Controller) roomFreed() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// recheck decides again, each time room frees, whether the Workloads the
// leader sent back to Kueue's queue fit now, until ctx ends. Kueue would
// try them again only once their retry time has passed.
func (c *Controller) recheck(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		}
		if c.leading.Load() {
			c.recheckWaiting(ctx)
		}
	}
}

// recheckWaiting asks Kueue to try at once each waiting Workload whose
// pods fit the GPUs now, the longest waiting first, and only as many as
// the room holds: the room of each is held until the pass ends, so the
// next is tried beside it. Kueue reserves quota for it again and the
// check decides it as any other.
func (c *Controller) recheckWaiting(ctx context.Context) {
	logger := klog.FromContext(ctx)
	c.mu.Lock()
	keys := make([]string, 0, len(c.waiting))
	for key := range c.waiting {
		keys = append(keys, key)
	}
	c.mu.Unlock()
	slices.SortFunc(keys, func(a, b string) int { return c.waitingSince(a).Compare(c.waitingSince(b)) })

	now := c.cfg.Clock.Now()
	var trial []*holding
	defer func() {
		for _, h := range trial {
			c.free(h)
		}
	}()
	for _, key := range keys {
		obj, exists, err := c.workloads.GetIndexer().GetByKey(key)
		var w workload
		if err != nil || !exists || fromUnstructured(obj, &w) != nil || w.condition(conditionQuotaReserved) || !w.retryAt().After(now) {
			// Gone, or Kueue has it again: no longer waiting on a free.
			c.stopWaiting(key)
			continue
		}
		h, err := c.hold(&w, func(ps *podSet) int32 { return ps.Count }, now, trialKey)
		if err != nil {
			continue
		}
		trial = append(trial, h)
		if err := c.retryNow(ctx, &w, now); err != nil {
			logger.Error(err, "Asking Kueue to try a Workload that fits now", "workload", key)
			continue
		}
		c.stopWaiting(key)
		logger.V(2).Info("Room freed for a waiting Workload; Kueue tries it now", "workload", key)
	}
}

// trialKey keys the room held for a waiting Workload during a recheck
// apart from its real hold, which a decision made meanwhile may take.
func trialKey(w *workload, ps *podSet) string { return "recheck/" + gangKey(w, ps) }

// retryNow moves the Workload's retry time, which Kueue set from the
// check's Retry, to now, on the version the check read.
func (c *Controller) retryNow(ctx context.Context, w *workload, now time.Time) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": w.ResourceVersion},
		"status":   map[string]any{"requeueState": map[string]any{"requeueAt": now.UTC().Format(time.RFC3339)}},
	})
	if err != nil {
		return err
	}
	_, err = c.cfg.Dynamic.Resource(workloads).Namespace(w.Namespace).Patch(ctx, w.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}, "status")
	return err
}

// wait records that the Workload was sent back because its pods did not
// fit now.
func (c *Controller) wait(key string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waiting[key] = now
}

// stopWaiting forgets a waiting Workload.
func (c *Controller) stopWaiting(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.waiting, key)
}

// waitingSince is when the Workload was sent back.
func (c *Controller) waitingSince(key string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waiting[key]
}
