// Package podfilter shows one pod informer as several: each sees the pods
// a predicate keeps, as an informer whose list and watch selected them
// would, while the API server sends every pod once.
package podfilter

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// New returns the informer seen as an informer on the pods keep keeps.
// Its handlers hear of a pod as added when keep first keeps it, as updated
// while keep keeps it, and as deleted when keep stops keeping it or it
// goes; its lister finds only the pods keep keeps. The informer is its
// owner's to run.
func New(informer cache.SharedIndexInformer, keep func(*corev1.Pod) bool) coreinformers.PodInformer {
	return filtered{informer: informer, keep: keep}
}

type filtered struct {
	informer cache.SharedIndexInformer
	keep     func(*corev1.Pod) bool
}

func (f filtered) Informer() cache.SharedIndexInformer {
	return &filteredInformer{SharedIndexInformer: f.informer, keep: f.keep}
}

func (f filtered) Lister() corelisters.PodLister {
	return lister{all: corelisters.NewPodLister(f.informer.GetIndexer()), keep: f.keep}
}

// filteredInformer adds each handler filtered.
type filteredInformer struct {
	cache.SharedIndexInformer
	keep func(*corev1.Pod) bool
}

func (i *filteredInformer) AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandler(i.filter(handler))
}

func (i *filteredInformer) AddEventHandlerWithResyncPeriod(handler cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(i.filter(handler), resync)
}

func (i *filteredInformer) AddEventHandlerWithOptions(handler cache.ResourceEventHandler, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithOptions(i.filter(handler), options)
}

func (i *filteredInformer) filter(handler cache.ResourceEventHandler) cache.ResourceEventHandler {
	return cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			pod, ok := obj.(*corev1.Pod)
			return ok && i.keep(pod)
		},
		Handler: handler,
	}
}

// lister lists the pods keep keeps.
type lister struct {
	all  corelisters.PodLister
	keep func(*corev1.Pod) bool
}

func (l lister) List(selector labels.Selector) ([]*corev1.Pod, error) {
	return l.kept(l.all.List(selector))
}

func (l lister) Pods(namespace string) corelisters.PodNamespaceLister {
	return namespaceLister{all: l.all.Pods(namespace), lister: l}
}

func (l lister) kept(pods []*corev1.Pod, err error) ([]*corev1.Pod, error) {
	if err != nil {
		return nil, err
	}
	var kept []*corev1.Pod
	for _, pod := range pods {
		if l.keep(pod) {
			kept = append(kept, pod)
		}
	}
	return kept, nil
}

type namespaceLister struct {
	all corelisters.PodNamespaceLister
	lister
}

func (n namespaceLister) List(selector labels.Selector) ([]*corev1.Pod, error) {
	return n.kept(n.all.List(selector))
}

// Get finds the pod only if keep keeps it, as the lister of an informer
// that selected the kept pods would.
func (n namespaceLister) Get(name string) (*corev1.Pod, error) {
	pod, err := n.all.Get(name)
	if err != nil {
		return nil, err
	}
	if !n.keep(pod) {
		return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
	}
	return pod, nil
}
