package tracker

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/scheduler/view"
)

// collectAfter is how long after a pod's delete the tracker checks
// whether its allocation is gone. kube-controller-manager's garbage
// collector deletes it through its owner reference, within a second on a
// healthy control plane; checking at once read the pod again from the API
// server and sent a second delete for every pod that ended, two requests
// that the garbage collector made pointless. The check stays for a
// collector that is slow or off, and for allocations without the owner
// reference. The pod's GPUs are free in the view from its delete.
const collectAfter = 5 * time.Second

// Sweep queues every allocation whose pod the cache lacks, or has with
// another UID, for deletion, and drops reservations whose bind ended long
// ago without a GPUAllocation to show for it in the cache or the API; a
// bind still waiting for its node's turn has not ended.
func (t *Tracker) Sweep(ctx context.Context) {
	logger := klog.FromContext(ctx)
	allocations, err := t.allocations.List(labels.Everything())
	if err != nil {
		logger.Error(err, "Listing GPU allocations for the orphan sweep")
		return
	}
	for _, a := range allocations {
		pod, err := t.pods.Pods(a.Namespace).Get(a.Name)
		if errors.IsNotFound(err) || (err == nil && pod.UID != a.Spec.PodUID) {
			t.orphans.Add(cache.MetaObjectToName(a))
		}
	}

	type reservation struct {
		uid                   types.UID
		namespace, name, node string
		since                 time.Time
	}
	var stale []reservation
	cutoff := t.clock.Now().Add(-t.reservationMaxAge)
	t.view.Each(nil, func(p *view.Pod) {
		// A bind waiting for its node's turn keeps its reservation however
		// long the queue ahead of it: it still writes the allocation.
		if p.Reserved && p.Since.Before(cutoff) && !t.gate.Queued(p.Node, p.UID) {
			stale = append(stale, reservation{p.UID, p.Namespace, p.Name, p.Node, p.Since})
		}
	})
	for _, r := range stale {
		a, err := t.allocations.GPUAllocations(r.namespace).Get(r.name)
		if err != nil || a.Spec.PodUID != r.uid {
			// A bind keeps its reservation with the allocation when the
			// binding's answer was lost, and the pod may run on it: the
			// cache may only lag behind, so the API server decides.
			a, err = t.tessera.GpuV1alpha1().GPUAllocations(r.namespace).Get(ctx, r.name, metav1.GetOptions{})
		}
		switch {
		case err == nil && a.Spec.PodUID == r.uid:
			t.view.PlaceOverReservation(a, r.since)
			continue
		case err != nil && !errors.IsNotFound(err):
			logger.Error(err, "Reading the GPUAllocation of an old reservation; keeping the reservation", "pod", klog.KRef(r.namespace, r.name))
			continue
		}
		if t.view.ReleaseReservation(r.uid, r.since) {
			logger.Info("Dropped a reservation whose GPUAllocation never appeared", "pod", klog.KRef(r.namespace, r.name), "node", r.node, "since", r.since)
			t.freed(r.node)
			t.quotaFreed(r.namespace)
		}
	}
}

func (t *Tracker) runOrphanWorker(ctx context.Context) {
	for t.processNextOrphan(ctx) {
	}
}

func (t *Tracker) processNextOrphan(ctx context.Context) bool {
	key, quit := t.orphans.Get()
	if quit {
		return false
	}
	defer t.orphans.Done(key)
	if err := t.deleteIfOrphan(ctx, key); err != nil {
		klog.FromContext(ctx).Error(err, "Checking for an orphaned GPU allocation", "allocation", key)
		t.orphans.AddRateLimited(key)
		return true
	}
	t.orphans.Forget(key)
	return true
}

// deleteIfOrphan deletes the allocation if its pod is gone or is another
// pod of the same name. The pod is read from the API before deleting, since
// the cache may not have seen a pod created a moment ago.
func (t *Tracker) deleteIfOrphan(ctx context.Context, key cache.ObjectName) error {
	a, err := t.allocations.GPUAllocations(key.Namespace).Get(key.Name)
	if errors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading allocation from cache: %w", err)
	}
	if pod, err := t.pods.Pods(key.Namespace).Get(key.Name); err == nil && pod.UID == a.Spec.PodUID {
		return nil
	}
	pod, err := t.kube.CoreV1().Pods(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
	switch {
	case err == nil && pod.UID == a.Spec.PodUID:
		return nil
	case err != nil && !errors.IsNotFound(err):
		return fmt.Errorf("reading pod %s: %w", key, err)
	}
	uid := a.UID
	err = t.tessera.GpuV1alpha1().GPUAllocations(key.Namespace).Delete(ctx, key.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !errors.IsNotFound(err) && !errors.IsConflict(err) {
		return fmt.Errorf("deleting orphaned allocation %s: %w", key, err)
	}
	if err == nil {
		klog.FromContext(ctx).Info("Deleted orphaned GPU allocation", "allocation", klog.KObj(a), "podUID", a.Spec.PodUID, "node", a.Spec.NodeName)
	}
	return nil
}
