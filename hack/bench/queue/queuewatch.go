package queue

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	gpulisters "github.com/tessera-gpu/tessera/generated/listers/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/test/framework"
)

// queueWatch feeds the tracker what the bench's watches see: Workloads
// admitted, the Jobs' pods placed (bound, with their GPUAllocation),
// started (the allocation Allocated) and found no room, and hands each
// Job whose pods all run to work.
type queueWatch struct {
	tracker     *queueTracker
	pods        corelisters.PodLister
	allocations gpulisters.GPUAllocationLister
	workloads   dynamicinformer.DynamicSharedInformerFactory
	// running is told each Job whose pods all run, once.
	running func(job string)
}

// dynamicClient is a client for Kueue's objects on the run's control plane.
func dynamicClient(env *harness.ClusterEnv) (dynamic.Interface, error) {
	return dynamic.NewForConfig(env.ControlPlane.Config)
}

// watchQueue adds the queue's handlers to the bench's informers, which
// must not have started yet, and makes a Workload informer; start runs it.
func watchQueue(env *harness.ClusterEnv, watches *harness.Informers, tracker *queueTracker, running func(job string)) (*queueWatch, error) {
	client, err := dynamicClient(env)
	if err != nil {
		return nil, err
	}
	pods := watches.Kube.Core().V1().Pods()
	allocations := watches.Tessera.Gpu().V1alpha1().GPUAllocations()
	w := &queueWatch{
		tracker: tracker, pods: pods.Lister(), allocations: allocations.Lister(), running: running,
		workloads: dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, harness.Namespace, nil),
	}
	byName := func(obj any) {
		if name, err := cache.ObjectToName(obj); err == nil {
			w.observe(name.Name)
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: byName, UpdateFunc: func(_, obj any) { byName(obj) }}
	if _, err := allocations.Informer().AddEventHandler(handler); err != nil {
		return nil, err
	}
	if _, err := pods.Informer().AddEventHandler(handler); err != nil {
		return nil, err
	}
	admitted := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			w.observeWorkload(u)
		}
	}
	_, err = w.workloads.ForResource(framework.KueueResource("workloads")).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: admitted, UpdateFunc: func(_, obj any) { admitted(obj) },
	})
	return w, err
}

// start runs the Workload informer until ctx ends and waits for it to sync.
func (w *queueWatch) start(ctx context.Context) error {
	w.workloads.Start(ctx.Done())
	for typ, ok := range w.workloads.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("syncing the informer for %v: %w", typ, context.Cause(ctx))
		}
	}
	return nil
}

// shutdown waits for the Workload informer to stop, once its ctx has ended.
func (w *queueWatch) shutdown() { w.workloads.Shutdown() }

// observe records what is known of a Job's pod and its allocation, which
// have the same name.
func (w *queueWatch) observe(name string) {
	now := time.Now()
	pod, err := w.pods.Pods(harness.Namespace).Get(name)
	if err != nil {
		return
	}
	job := pod.Labels[batchv1.JobNameLabel]
	if job == "" {
		return
	}
	if unschedulable(pod) {
		w.tracker.unschedulable(job, now)
	}
	alloc, err := w.allocations.GPUAllocations(harness.Namespace).Get(name)
	if err != nil || pod.Spec.NodeName == "" || alloc.Spec.PodUID != pod.UID {
		return
	}
	w.tracker.placed(name, job, alloc.Spec.MemoryMiB, now)
	if alloc.Status.Phase == gpuv1alpha1.AllocationAllocated && w.tracker.allocated(name, now) {
		w.running(job)
	}
}

// observeWorkload records, for the Job that owns the Workload, whether
// its quota is reserved and its admission checks are Ready, and its
// admission.
func (w *queueWatch) observeWorkload(wl *unstructured.Unstructured) {
	now := time.Now()
	admitted := condition(wl.Object, "Admitted")["status"] == "True"
	quota := condition(wl.Object, "QuotaReserved")["status"] == "True"
	checks := checksReady(wl.Object)
	for _, ref := range wl.GetOwnerReferences() {
		if ref.Kind != "Job" {
			continue
		}
		// Kueue may reserve and admit in one write: the gates open then.
		w.tracker.workload(ref.Name, quota, checks, now)
		if admitted {
			w.tracker.admitted(ref.Name, now)
		}
	}
}

// checksReady reports whether a Workload has admission checks and all
// are Ready.
func checksReady(obj map[string]any) bool {
	checks, _, _ := unstructured.NestedSlice(obj, "status", "admissionChecks")
	for _, c := range checks {
		if c, ok := c.(map[string]any); !ok || c["state"] != "Ready" {
			return false
		}
	}
	return len(checks) > 0
}

// unschedulable reports whether the scheduler has found the pod no room.
func unschedulable(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// condition returns the status condition of type kind of a Kueue object,
// or nil.
func condition(obj map[string]any, kind string) map[string]any {
	conditions, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
	for _, c := range conditions {
		if c, ok := c.(map[string]any); ok && c["type"] == kind {
			return c
		}
	}
	return nil
}
