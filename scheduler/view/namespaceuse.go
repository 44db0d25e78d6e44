package view

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// namespaceUse is what the pods of each namespace hold of its GPU quota (see
// placement.Use), kept as pods are added and released. It changes only
// under the view's write lock, and has a lock of its own so that it can
// be read under the view's read lock too, from Read's fn.
type namespaceUse struct {
	mu          sync.Mutex
	byNamespace map[string]placement.Use
}

func (u *namespaceUse) add(namespace string, x placement.Use) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.byNamespace == nil {
		u.byNamespace = map[string]placement.Use{}
	}
	u.byNamespace[namespace] = u.byNamespace[namespace].Add(x)
}

func (u *namespaceUse) sub(namespace string, x placement.Use) {
	u.mu.Lock()
	defer u.mu.Unlock()
	left := u.byNamespace[namespace].Sub(x)
	if left.IsZero() {
		delete(u.byNamespace, namespace)
		return
	}
	u.byNamespace[namespace] = left
}

func (u *namespaceUse) get(namespace string) placement.Use {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.byNamespace[namespace]
}

// Used returns what the namespace's pods hold of its GPU quota: every
// GPUAllocation the view places, and the reservations of binds in
// progress. It may be called from Read's fn.
func (v *View) Used(namespace string) placement.Use { return v.usage.get(namespace) }

// UsedWithout is Used without what the pod holds, if it is of the
// namespace: a pod being scheduled again holds only what an interrupted
// bind left behind, which its new placement replaces. A pod of a gang
// takes the place of one of its gang's holds, so one is left out too. It must not be
// called from Read's fn.
func (v *View) UsedWithout(namespace string, pod types.UID) placement.Use {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.usedWithout(namespace, pod)
}

// usedWithout is UsedWithout under the view's lock.
func (v *View) usedWithout(namespace string, pod types.UID) placement.Use {
	used := v.usage.get(namespace)
	if p, ok := v.pods[pod]; ok && p.Namespace == namespace {
		used = used.Sub(p.use)
	}
	if h := v.anyHeldFor(pod); h != nil && h.Namespace == namespace {
		used = used.Sub(h.use)
	}
	return used
}

// EachNamespace calls fn for every namespace whose pods hold GPUs, with
// what they hold of its quota.
func (v *View) EachNamespace(fn func(namespace string, used placement.Use)) {
	v.usage.mu.Lock()
	defer v.usage.mu.Unlock()
	for ns, used := range v.usage.byNamespace {
		fn(ns, used)
	}
}

// recount counts again what the pods on n hold of their namespaces'
// quotas, now that n's GPUs are known or changed: an allocation seen
// before its node's GPUNode was counted without knowing which of its GPUs
// it has whole. A pod whose count changes is replaced by a copy, since
// callers of Pod may still read the old one.
func (v *View) recount(n *Node) {
	for uid, p := range n.pods {
		use := placement.UseOf(p.Containers, &n.Placement)
		if use == p.use {
			continue
		}
		c := *p
		c.use = use
		n.pods[uid], v.pods[uid] = &c, &c
		v.usage.sub(p.Namespace, p.use)
		v.usage.add(c.Namespace, c.use)
	}
}
