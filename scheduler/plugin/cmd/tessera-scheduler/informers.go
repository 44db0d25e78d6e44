package main

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// schedulerInformers is kube-scheduler's informer factory
// (scheduler.NewInformerFactory) with a pod informer that also leaves out
// the pods parked with gpuv1alpha1.ParkedLabel: those kube-scheduler never
// holds in its queue, nor walks on every pod event, nor reads when it
// starts. Tessera's fit gate watches them on its own.
func schedulerInformers(kube kubernetes.Interface, name *cache.InformerName) informers.SharedInformerFactory {
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithInformerName(name))
	notParked, err := labels.NewRequirement(gpuv1alpha1.ParkedLabel, selection.DoesNotExist, nil)
	if err != nil {
		panic(err) // a constant key
	}
	factory.InformerFor(&v1.Pod{}, func(kube kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		informer := coreinformers.NewFilteredPodInformer(kube, metav1.NamespaceAll, resync, cache.Indexers{}, func(lo *metav1.ListOptions) {
			// As kube-scheduler's: ended pods hold nothing.
			lo.FieldSelector = "status.phase!=" + string(v1.PodSucceeded) + ",status.phase!=" + string(v1.PodFailed)
			lo.LabelSelector = labels.NewSelector().Add(*notParked).String()
		})
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
	})
	return factory
}
