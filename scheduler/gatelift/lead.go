package gatelift

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/scheduler/election"
	"github.com/tessera-gpu/tessera/scheduler/preemption"
	"github.com/tessera-gpu/tessera/scheduler/waiters"
)

// Run stands for the fit gate's election, and lifts gates while it
// leads, until ctx ends.
func (l *Lifter) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	defer l.judging.ShutDown()
	for range workers {
		wg.Go(func() { l.work(ctx) })
	}
	wg.Go(func() { l.expire(ctx) })
	wg.Go(func() { l.reasons.Run(ctx) })
	wg.Go(func() { l.queue.Sweep(ctx) })
	logger := klog.FromContext(ctx)
	lease := l.cfg.LeaseNamespace + "/" + l.cfg.LeaseName
	election.Run(ctx, l.cfg.Kube, l.cfg.LeaseNamespace, l.cfg.LeaseName, "which gated pods to release", leaderelection.LeaderCallbacks{
		OnStartedLeading: func(ctx context.Context) {
			// Judged on a view not yet synced, every pod would be held.
			if wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
				return l.cfg.Ready() && l.synced(), nil
			}) != nil {
				return
			}
			logger.Info("Lifting fit gates", "lease", lease)
			// Set before the pods are listed, so that none added
			// meanwhile is missed; one may be judged twice.
			l.leading.Store(true)
			l.adopt()
		},
		OnStoppedLeading: func() {
			l.leading.Store(false)
			logger.Info("No longer lifting fit gates", "lease", lease)
		},
	})
}

// adopt has the gate judge together, in queue order, every gated pod,
// as a new leader must: it knows none of them. Each is told why it waits
// unless its condition says so already; those let by are lifted by the
// workers.
func (l *Lifter) adopt() {
	pods, err := l.pods.List(labels.Everything())
	if err != nil {
		return
	}
	pods = slices.DeleteFunc(pods, func(pod *corev1.Pod) bool { return !gated(pod) })
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		return waiters.QueueOrder(a, preemption.Priority(a), b, preemption.Priority(b))
	})
	l.queue.JudgeTogether(pods, func(pod *corev1.Pod) {
		if l.judge(pod) {
			l.judging.Add(cache.MetaObjectToName(pod))
		}
	}, l.reasons, "Gated pods judged; releasing those GPUs free now hold", "gated", len(pods))
}
