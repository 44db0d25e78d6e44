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

// A Workload whose pods do not fit is answered Retry with the wait
// gangFit.retryAfter. Kueue keeps its quota through that wait, then
// evicts it and queues it again. When room frees meanwhile, the check
// decides it again at once: the Workloads it sent back are queued for
// retryIfFits, the longest waiting first, so that each takes its room
// before the next is tried, and only as many get in as the room holds.

// Freed is the tracker telling that GPUs may have freed on a node.
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

// recheck queues the waiting Workloads each time room frees, until ctx
// ends.
func (c *Controller) recheck(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		}
		if c.leading.Load() {
			c.queueWaiting()
		}
	}
}

// queueWaiting queues the Workloads the check sent back, the longest
// waiting first.
func (c *Controller) queueWaiting() {
	c.mu.Lock()
	keys := make([]string, 0, len(c.waiting))
	for key := range c.waiting {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b string) int { return c.waiting[a].Compare(c.waiting[b]) })
	c.mu.Unlock()
	for _, key := range keys {
		c.queue.Add(key)
	}
}

// retryIfFits admits a Workload the check sent back whose pods fit now,
// while Kueue waits to try it again: the check turns Ready, and Kueue's
// retry time, which keeps it from admitting the Workload, moves to now.
// Nothing is written when they still do not fit.
func (c *Controller) retryIfFits(ctx context.Context, key string, w *workload, st checkState) error {
	now := c.cfg.Clock.Now()
	if !w.retryAt().After(now) {
		// Kueue tries it again anyway.
		c.stopWaiting(key)
		return nil
	}
	h, err := c.hold(w, func(ps *podSet) int32 { return w.count(ps) }, now)
	if err != nil {
		return nil
	}
	if err := c.admit(ctx, key, w, st, h, now); err != nil {
		return err
	}
	if err := c.retryNow(ctx, w, now); err != nil {
		// The check is Ready and its room held; Kueue admits the
		// Workload at its retry time.
		return err
	}
	klog.FromContext(ctx).V(2).Info("Room freed for a Workload sent back; Kueue admits it now", "workload", key)
	return nil
}

// retryNow moves the Workload's retry time, which Kueue set from the
// check's Retry, to now.
func (c *Controller) retryNow(ctx context.Context, w *workload, now time.Time) error {
	patch, err := json.Marshal(map[string]any{
		"status": map[string]any{"requeueState": map[string]any{"requeueAt": now.UTC().Format(time.RFC3339)}},
	})
	if err != nil {
		return err
	}
	_, err = c.cfg.Dynamic.Resource(workloads).Namespace(w.Namespace).Patch(ctx, w.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}, "status")
	return err
}

// wait records that the Workload was sent back because its pods did not
// fit.
func (c *Controller) wait(key string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waiting[key] = now
}

// stopWaiting forgets a Workload sent back.
func (c *Controller) stopWaiting(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.waiting, key)
}

// isWaiting reports whether the check sent the Workload back and waits
// for room for it.
func (c *Controller) isWaiting(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.waiting[key]
	return ok
}
