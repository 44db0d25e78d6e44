package main

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/plugin"
)

// schedulerInformers is kube-scheduler's informer factory
// (scheduler.NewInformerFactory) with a pod informer of Tessera's own
// (see podInformer), whose handlers the screen keeps from the pods the
// fit gates hold.
func schedulerInformers(kube kubernetes.Interface, name *cache.InformerName, screen *plugin.Screen) informers.SharedInformerFactory {
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithInformerName(name))
	factory.InformerFor(&v1.Pod{}, func(kube kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return screen.Wrap(podInformer(kube, resync))
	})
	return factory
}

// podInformer is kube-scheduler's pod informer with two changes:
//
//   - It leaves out the pods parked with gpuv1alpha1.ParkedLabel: those
//     kube-scheduler never holds in its queue, nor walks on every pod
//     event, nor reads when it starts. Tessera's fit gate watches them on
//     its own.
//   - It reads its first state by a list, bound pods first, not by a
//     watch-list stream, whose items reach the handlers in no order.
//     kube-scheduler walks every pod it holds unschedulable on each bound
//     pod it reads, so a scheduler that starts over a backlog no one has
//     parked yet would otherwise do bound × waiting steps before it is
//     ready. Read first, each bound pod finds nothing to walk.
func podInformer(kube kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
	notParked, err := labels.NewRequirement(gpuv1alpha1.ParkedLabel, selection.DoesNotExist, nil)
	if err != nil {
		panic(err) // a constant key
	}
	options := func(lo *metav1.ListOptions) {
		// As kube-scheduler's: ended pods hold nothing.
		lo.FieldSelector = "status.phase!=" + string(v1.PodSucceeded) + ",status.phase!=" + string(v1.PodFailed)
		lo.LabelSelector = labels.NewSelector().Add(*notParked).String()
	}
	pods := kube.CoreV1().Pods(metav1.NamespaceAll)
	informer := cache.NewSharedIndexInformerWithOptions(listedBoundFirst{&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			options(&lo)
			lo.Limit = 0 // one page, to put every bound pod first
			list, err := pods.List(ctx, lo)
			if err != nil {
				return nil, err
			}
			list.Items = boundFirst(list.Items)
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
			options(&lo)
			return pods.Watch(ctx, lo)
		},
	}}, &v1.Pod{}, cache.SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: cache.Indexers{}})
	// As kube-scheduler's: managed fields are most of a pod's memory.
	if err := informer.SetTransform(func(obj any) (any, error) {
		if pod, ok := obj.(*v1.Pod); ok {
			pod.ManagedFields = nil
		}
		return obj, nil
	}); err != nil {
		panic(err) // not started
	}
	return informer
}

// listedBoundFirst is a ListWatch whose first state the reflector reads
// by its list, which boundFirst orders, not by a watch-list stream.
type listedBoundFirst struct{ *cache.ListWatch }

// IsWatchListSemanticsUnSupported tells the reflector to list.
func (listedBoundFirst) IsWatchListSemanticsUnSupported() bool { return true }

// boundFirst returns pods with the bound ones first, each part in the
// order it had.
func boundFirst(pods []v1.Pod) []v1.Pod {
	ordered := make([]v1.Pod, 0, len(pods))
	for _, bound := range []bool{true, false} {
		for i := range pods {
			if (pods[i].Spec.NodeName != "") == bound {
				ordered = append(ordered, pods[i])
			}
		}
	}
	return ordered
}
