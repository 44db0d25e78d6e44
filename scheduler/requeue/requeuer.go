package requeue

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// Annotation is the pod annotation the extender sets to the time GPUs were
// freed, to make kube-scheduler retry the pod.
const Annotation = "tessera.dev/gpus-freed-at"

// MaxTracked bounds how many turned-away pods are remembered.
const MaxTracked = 10000

// Requeuer remembers the pods the extender turned away and pokes them when
// GPUs are freed.
type Requeuer struct {
	kube         kubernetes.Interface
	clock        clock.WithTicker
	window       time.Duration
	fieldManager string

	mu       sync.Mutex
	rejected map[types.UID]*rejection
	// quotaFreed is when each namespace's GPU quota last may have got
	// room (see QuotaFreed).
	quotaFreed map[string]time.Time
	// ft is what deciding whether a node serves a pod reuses.
	ft    placement.Fitter
	queue workqueue.TypedRateLimitingInterface[types.UID]
}

// rejection is one pod the extender turned away.
type rejection struct {
	namespace, name string
	// serves tells whether a node could take the pod now.
	serves func(ft *placement.Fitter, node string) bool
	// admits, for a pod its namespace's GPU quota turned away, tells
	// whether the quota has room for it now (see OverQuota); nil for
	// others.
	admits func(taken placement.Use) (placement.Use, bool)
	at     time.Time // the latest time it was turned away
	poked  time.Time // when it was last queued for a poke
}

// New returns a requeuer that pokes pods turned away no longer than window
// before GPUs are freed: long enough to cover the extender's informers
// lagging behind kube-scheduler's.
func New(kube kubernetes.Interface, clk clock.WithTicker, window time.Duration, fieldManager string) *Requeuer {
	return &Requeuer{
		kube:         kube,
		clock:        clk,
		window:       window,
		fieldManager: fieldManager,
		rejected:     map[types.UID]*rejection{},
		quotaFreed:   map[string]time.Time{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[types.UID](),
			workqueue.TypedRateLimitingQueueConfig[types.UID]{Clock: clk},
		),
	}
}

// Rejected records that no node could take the pod; serves tells whether
// a node could take it now, nil when any may.
func (r *Requeuer) Rejected(pod *corev1.Pod, serves func(ft *placement.Fitter, node string) bool) {
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if rej, ok := r.rejected[pod.UID]; ok {
		rej.at, rej.serves, rej.admits = now, serves, nil
		return
	}
	if len(r.rejected) >= MaxTracked {
		r.expire(now)
		if len(r.rejected) >= MaxTracked {
			return
		}
	}
	r.rejected[pod.UID] = &rejection{namespace: pod.Namespace, name: pod.Name, serves: serves, at: now}
}

// Forget drops a pod that was bound or deleted.
func (r *Requeuer) Forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.rejected, uid)
}

// Freed queues a poke for every pod turned away within the window and not
// poked since that the node, as the view holds it now, could take. Under a
// backlog nearly every waiting pod was turned away within the window, and
// each poke is a write and a cluster event that retries every pod turned
// away; a node that can take none of them pokes none.
func (r *Requeuer) Freed(node string) {
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(now)
	for uid, rej := range r.rejected {
		if rej.at.After(rej.poked) && (rej.serves == nil || rej.serves(&r.ft, node)) {
			rej.poked = now
			r.queue.Add(uid)
		}
	}
}

// expire forgets pods turned away longer than the window ago: kube-scheduler
// retries those on the cluster event itself, after the extender saw it.
// It keeps those their namespace's GPU quota turned away: no event of
// kube-scheduler's follows a quota raised.
func (r *Requeuer) expire(now time.Time) {
	for uid, rej := range r.rejected {
		if now.Sub(rej.at) > r.window && rej.admits == nil {
			delete(r.rejected, uid)
		}
	}
	for namespace, freed := range r.quotaFreed {
		if now.Sub(freed) > r.window {
			delete(r.quotaFreed, namespace)
		}
	}
}

// Run pokes queued pods until ctx ends.
func (r *Requeuer) Run(ctx context.Context) {
	defer r.queue.ShutDown()
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		for r.processNext(ctx) {
		}
	}, time.Second)
	<-ctx.Done()
}

func (r *Requeuer) processNext(ctx context.Context) bool {
	uid, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(uid)
	if err := r.poke(ctx, uid); err != nil {
		klog.FromContext(ctx).V(2).Info("Poking a pod to be retried failed", "podUID", uid, "err", err)
		r.queue.AddRateLimited(uid)
		return true
	}
	r.queue.Forget(uid)
	return true
}

// poke sets the annotation on the pod, if it is still the same pod.
func (r *Requeuer) poke(ctx context.Context, uid types.UID) error {
	r.mu.Lock()
	rej, ok := r.rejected[uid]
	var namespace, name string
	if ok {
		namespace, name = rej.namespace, rej.name
	}
	r.mu.Unlock()
	if !ok {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		// The UID makes the patch fail on another pod of the same name.
		"uid":         uid,
		"annotations": map[string]string{Annotation: r.clock.Now().UTC().Format(time.RFC3339Nano)},
	}})
	if err != nil {
		return err
	}
	_, err = r.kube.CoreV1().Pods(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: r.fieldManager})
	switch {
	case err == nil:
		klog.FromContext(ctx).V(4).Info("Poked pod to be retried after GPUs were freed", "pod", klog.KRef(namespace, name))
		return nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err), apierrors.IsInvalid(err):
		// Gone, or replaced by another pod of that name (its UID cannot change).
		r.Forget(uid)
		return nil
	}
	return fmt.Errorf("annotating pod %s/%s: %w", namespace, name, err)
}
