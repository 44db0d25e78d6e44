package fitgate

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/tessera-gpu/tessera/scheduler/preemption"
)

// Priorities are the priorities of the pods bound to nodes and not done,
// so that a pod that could preempt one of them is never held: its
// preemption is kube-scheduler's to try. Pods without GPUs count too,
// which only lets more pods by.
type Priorities struct {
	mu     sync.Mutex
	pods   map[types.UID]int32
	counts map[int32]int
	// lowered is told the lowest priority when a pod bound comes below
	// every other.
	lowered func(int32)
}

// NewPriorities returns an empty set of priorities; feed it the pods
// through Handler.
func NewPriorities() *Priorities {
	return &Priorities{pods: map[types.UID]int32{}, counts: map[int32]int{}}
}

// OnLowered has fn told the lowest priority whenever a pod bound comes
// below every other bound pod: the pods held until then may now preempt
// it. Call it before Handler's events come.
func (p *Priorities) OnLowered(fn func(lowest int32)) { p.lowered = fn }

// Handler returns the pod informer handler that keeps the priorities.
func (p *Priorities) Handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.set(obj, false) },
		UpdateFunc: func(_, obj any) { p.set(obj, false) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			p.set(obj, true)
		},
	}
}

// Lowest returns the lowest priority of a bound pod, and whether there is
// one.
func (p *Priorities) Lowest() (int32, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lowest()
}

// lowest is Lowest under p.mu.
func (p *Priorities) lowest() (int32, bool) {
	var lowest int32
	found := false
	for priority := range p.counts {
		if !found || priority < lowest {
			lowest, found = priority, true
		}
	}
	return lowest, found
}

// set counts the pod if it is bound, not done and not gone.
func (p *Priorities) set(obj any, gone bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	counts := !gone && pod.Spec.NodeName != "" && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
	if lowered := p.count(pod, counts); lowered && p.lowered != nil {
		p.lowered(preemption.Priority(pod))
	}
}

// count counts the pod, or stops counting it, and reports whether it
// came below every other.
func (p *Priorities) count(pod *corev1.Pod, counts bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.pods[pod.UID]; ok {
		if !counts {
			delete(p.pods, pod.UID)
			if p.counts[old]--; p.counts[old] == 0 {
				delete(p.counts, old)
			}
		}
		return false
	}
	if !counts {
		return false
	}
	priority := preemption.Priority(pod)
	was, found := p.lowest()
	p.pods[pod.UID] = priority
	p.counts[priority]++
	return !found || priority < was
}
