package main

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

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
//   - It holds every pod, parked and ended ones too, for Tessera's view to
//     read each pod once from the API server, not once for kube-scheduler
//     and once more for the view: at a first start over 180,000 waiting
//     pods each list keeps the API server busy for tens of seconds. The
//     screen keeps what kube-scheduler's own informer leaves out from its
//     handlers (see plugin.Screen.Wrap): the ended pods, and the pods
//     parked with gpuv1alpha1.ParkedLabel, which kube-scheduler never
//     holds in its queue nor walks on every pod event.
//   - It reads its first state by a list, bound pods first, not by a
//     watch-list stream, whose items reach the handlers in no order.
//     kube-scheduler walks every pod it holds unschedulable on each bound
//     pod it reads, so a scheduler that starts over a backlog no one has
//     parked yet would otherwise do bound × waiting steps before it is
//     ready. Read first, each bound pod finds nothing to walk.
func podInformer(kube kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
	pods := kube.CoreV1().Pods(metav1.NamespaceAll)
	informer := cache.NewSharedIndexInformerWithOptions(listedBoundFirst{&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			lo.Limit = 0 // one page, to put every bound pod first
			list, err := pods.List(ctx, lo)
			if err != nil {
				return nil, err
			}
			list.Items = boundFirst(list.Items)
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
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
