package backlog

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	"github.com/tessera-gpu/tessera/hack/bench/harness"
)

// finisher ends the named pod as its node and kube-controller-manager
// would. It calls freeing just before it sends the request that frees the
// pod's GPUs, and the function freeing returns once that request has
// answered: the scheduler may see the request take effect, and bind
// another pod on the room, before its answer comes back.
type finisher func(ctx context.Context, name string, freeing func() (answered func())) error

// finishPods ends a running pod picked at random, rate times a second,
// for the duration, as jobs end on a busy cluster, and tells the tracker
// when each one's GPUs are freed, when the request that frees them is
// sent, and how long that request took to answer. It returns how many it
// ended.
func finishPods(ctx context.Context, tracker *backlogTracker, rate float64, duration time.Duration, rng *rand.Rand, finish finisher) (int, error) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(harness.MaxFinishing)
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	end := time.After(duration)
	ended, idle := 0, 0
loop:
	for {
		select {
		case <-gctx.Done():
			break loop
		case <-end:
			break loop
		case <-tick.C:
		}
		name, pod, ok := tracker.pick(rng)
		if !ok {
			idle++
			continue
		}
		ended++
		g.Go(func() error {
			return finish(gctx, name, func() func() {
				sent := time.Now()
				tracker.freed(pod, sent)
				return func() { tracker.answered(time.Since(sent)) }
			})
		})
	}
	if idle > 0 {
		klog.FromContext(ctx).Info("No pod was left running to end at some ticks", "ticks", idle)
	}
	if err := g.Wait(); err != nil {
		return ended, err
	}
	return ended, context.Cause(ctx)
}

// deletePod ends a pod as its kubelet would once it has stopped: deleted
// at once, since no kubelet runs to finish a graceful deletion.
func deletePod(ctx context.Context, kube kubernetes.Interface, name string) error {
	if err := kube.CoreV1().Pods(harness.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		return fmt.Errorf("deleting pod %s: %w", name, err)
	}
	return nil
}

// deletePodAndAllocation ends a pod as deletePod does, then deletes its
// GPUAllocation as kube-controller-manager's garbage collector does
// through the owner reference (no garbage collector runs here). The pod's
// delete frees the GPUs: Tessera's scheduler frees them in its view when
// it sees the pod deleted, which may be before that delete answers.
func deletePodAndAllocation(kube kubernetes.Interface, tessera versioned.Interface) finisher {
	return func(ctx context.Context, name string, freeing func() func()) error {
		answered := freeing()
		if err := deletePod(ctx, kube, name); err != nil {
			return err
		}
		answered()
		err := tessera.GpuV1alpha1().GPUAllocations(harness.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the allocation of pod %s: %w", name, err)
		}
		return nil
	}
}

// deletePodAndDeallocate ends a pod with a claim of its own: deleted as
// deletePod does, then its claim deallocated as kube-controller-manager's
// resourceclaim controller does for a claim no pod uses any more (the
// reservation and allocation cleared in one status update, then the
// scheduler's finalizer removed). The claim itself stays, as a claim a
// pod names does. The deallocation frees the GPUs.
func deletePodAndDeallocate(kube kubernetes.Interface) finisher {
	return func(ctx context.Context, name string, freeing func() func()) error {
		if err := deletePod(ctx, kube, name); err != nil {
			return err
		}
		claims := kube.ResourceV1().ResourceClaims(harness.Namespace)
		claim, err := claims.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading claim %s: %w", name, err)
		}
		claim.Status.ReservedFor, claim.Status.Allocation = nil, nil
		answered := freeing()
		if claim, err = claims.UpdateStatus(ctx, claim, metav1.UpdateOptions{FieldManager: harness.FieldManager}); err != nil {
			return fmt.Errorf("deallocating claim %s: %w", name, err)
		}
		answered()
		if len(claim.Finalizers) == 0 {
			return nil
		}
		claim.Finalizers = nil
		if _, err := claims.Update(ctx, claim, metav1.UpdateOptions{FieldManager: harness.FieldManager}); err != nil {
			return fmt.Errorf("removing the finalizer of claim %s: %w", name, err)
		}
		return nil
	}
}
