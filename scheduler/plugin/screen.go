package plugin

import (
	"context"
	"errors"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/tessera-gpu/tessera/scheduler/tracker"
)

// Screen hides the pods the fit gates hold from kube-scheduler's pod
// informer's handlers, in memory, from the moment a gate holds them until
// it releases them. Parking a pod by its label takes a write, at most
// parksPerSecond a second, and kube-scheduler walks every pod it holds
// unschedulable on each pod bound or ended: with a hundred thousand pods
// held at once (a scheduler that starts over a backlog) the walks took
// the scheduler's CPU for the minutes the labels took. A hidden pod is
// as good as parked to kube-scheduler, which learns of it as deleted and,
// once released, as added; the label still follows, so that a scheduler
// that starts keeps parked pods from kube-scheduler before any gate has
// judged them. A parked pod released is shown at once too, rather than
// once its label is off: a freed GPU's pod does not wait for a write.
//
// The tessera-scheduler command wraps its pod informer with Wrap; each
// gate tells the screen which pods it holds (follow) and of each pod it
// starts or stops holding (held).
type Screen struct {
	mu       sync.Mutex
	handlers []*screenedHandler
	holders  []func(types.UID) bool
	// informer is the informer Wrap screens, and store its store.
	informer cache.SharedIndexInformer
	store    cache.Store
	ops      []screenOp
	wake     chan struct{}
}

// screenOp hides the pod from the handlers, or shows it again.
type screenOp struct {
	key  cache.ObjectName
	uid  types.UID
	hide bool
}

// NewScreen returns a screen that hides nothing until a gate follows it.
func NewScreen() *Screen {
	return &Screen{wake: make(chan struct{}, 1)}
}

// Wrap returns the informer with every handler added to it screened: a
// handler never hears of an ended pod, nor of a pending one parked until
// a gate releases it, as if the informer left them out
// (kube-scheduler's own leaves ended pods out), nor of a pod a gate
// holds. The informer itself holds every pod, for Tessera's view to
// read each pod once (see unscreened); its store and lister hold them all.
func (s *Screen) Wrap(informer cache.SharedIndexInformer) cache.SharedIndexInformer {
	s.informer, s.store = informer, informer.GetStore()
	return &screenedInformer{SharedIndexInformer: informer, screen: s}
}

// follow has the screen hide the pods holds reports held.
func (s *Screen) follow(holds func(types.UID) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holders = append(s.holders, holds)
}

// holds reports whether any gate holds the pod.
func (s *Screen) holds(uid types.UID) bool {
	s.mu.Lock()
	holders := s.holders
	s.mu.Unlock()
	for _, holds := range holders {
		if holds(uid) {
			return true
		}
	}
	return false
}

// held queues hiding the pod, or showing it again. It runs under the
// gates' locks, kube-scheduler's queue lock among them, so it only queues.
func (s *Screen) held(pod *v1.Pod, held bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops = append(s.ops, screenOp{key: cache.MetaObjectToName(pod), uid: pod.UID, hide: held})
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run applies the queued operations until ctx ends.
func (s *Screen) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		}
		s.mu.Lock()
		ops, handlers := s.ops, s.handlers
		s.ops = nil
		s.mu.Unlock()
		for _, op := range ops {
			if op.hide && !s.holds(op.uid) {
				continue // released since
			}
			for _, h := range handlers {
				if op.hide {
					h.hide(s.store, op)
				} else {
					h.show(s.store, op)
				}
			}
		}
	}
}

// unscreened returns the informer Wrap screens, without the screen: its
// handlers hear of every pod, parked, held or ended.
func (s *Screen) unscreened() (cache.SharedIndexInformer, error) {
	if s.informer == nil {
		return nil, errors.New("parking needs kube-scheduler's pod informer screened (Screen.Wrap), as the tessera-scheduler command builds it")
	}
	return s.informer, nil
}

// screenedInformer is an informer whose handlers the screen wraps, and
// which runs the screen while it runs.
type screenedInformer struct {
	cache.SharedIndexInformer
	screen *Screen
}

func (i *screenedInformer) AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandler(i.screen.wrap(handler))
}

func (i *screenedInformer) AddEventHandlerWithResyncPeriod(handler cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(i.screen.wrap(handler), resync)
}

func (i *screenedInformer) AddEventHandlerWithOptions(handler cache.ResourceEventHandler, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithOptions(i.screen.wrap(handler), options)
}

func (i *screenedInformer) Run(stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	i.RunWithContext(ctx)
}

func (i *screenedInformer) RunWithContext(ctx context.Context) {
	go i.screen.run(ctx)
	i.SharedIndexInformer.RunWithContext(ctx)
}

func (s *Screen) wrap(handler cache.ResourceEventHandler) cache.ResourceEventHandler {
	h := &screenedHandler{handler: handler, hidden: map[types.UID]*v1.Pod{}, shown: map[types.UID]bool{}}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers = append(s.handlers, h)
	return &screening{h: h, screen: s}
}

// screenedHandler is a handler and the pods hidden from it, each as last
// seen. Its lock orders the informer's events and the screen's hides and
// shows into one sequence.
type screenedHandler struct {
	handler cache.ResourceEventHandler
	mu      sync.Mutex
	hidden  map[types.UID]*v1.Pod
	// shown are the parked pods shown to the handler before their label
	// came off.
	shown map[types.UID]bool
}

// sees reports whether the handler hears of the pod: a pod parked (and
// not shown) or ended is deleted to it, as kube-scheduler's own informer
// leaves ended pods out and a parking informer left parked ones out. A
// bound pod is never parked to it, since kube-scheduler counts what bound
// pods hold. It runs under h.mu.
func (h *screenedHandler) sees(obj any) bool {
	pod, ok := unwrap(obj).(*v1.Pod)
	if !ok {
		return true
	}
	return !tracker.PodDone(pod) && (!parked(pod) || pod.Spec.NodeName != "" || h.shown[pod.UID])
}

// hide tells the handler that the pod, as the store holds it, is deleted,
// unless it is hidden, gone, bound, or unseen.
func (h *screenedHandler) hide(store cache.Store, op screenOp) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, hidden := h.hidden[op.uid]; hidden {
		return
	}
	pod, ok := stored(store, op)
	if !ok || pod.Spec.NodeName != "" || !h.sees(pod) {
		return
	}
	delete(h.shown, op.uid)
	h.hidden[op.uid] = pod
	h.handler.OnDelete(pod)
}

// show tells the handler that the pod is added: a hidden pod as last
// seen, a parked one as the store holds it, before its label comes off.
func (h *screenedHandler) show(store cache.Store, op screenOp) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if pod, hidden := h.hidden[op.uid]; hidden {
		delete(h.hidden, op.uid)
		h.handler.OnAdd(pod, false)
		return
	}
	pod, ok := stored(store, op)
	if !ok || !parked(pod) || !pending(pod) || h.sees(pod) {
		return
	}
	h.shown[op.uid] = true
	h.handler.OnAdd(pod, false)
}

// stored returns the pod the operation is about, as the store holds it.
func stored(store cache.Store, op screenOp) (*v1.Pod, bool) {
	obj, ok, err := store.GetByKey(op.key.String())
	if err != nil || !ok {
		return nil, false
	}
	pod, ok := obj.(*v1.Pod)
	return pod, ok && pod.UID == op.uid
}

// screening passes the informer's events to a screened handler as it
// sees them, but for the pods hidden from it.
type screening struct {
	h      *screenedHandler
	screen *Screen
}

func (s *screening) OnAdd(obj any, isInInitialList bool) {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if s.h.sees(obj) {
		s.add(obj, isInInitialList)
	}
}

// add tells the handler of the pod, unless a gate holds it. It runs
// under s.h.mu.
func (s *screening) add(obj any, isInInitialList bool) {
	if pod, ok := obj.(*v1.Pod); ok && pod.Spec.NodeName == "" && s.screen.holds(pod.UID) {
		s.h.hidden[pod.UID] = pod
		return
	}
	s.h.handler.OnAdd(obj, isInInitialList)
}

func (s *screening) OnUpdate(old, obj any) {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	was, is := s.h.sees(old), s.h.sees(obj)
	if pod, ok := obj.(*v1.Pod); ok && (!is || !parked(pod)) {
		delete(s.h.shown, pod.UID)
	}
	switch {
	case !was && !is:
	case !was:
		s.add(obj, false)
	case !is:
		s.delete(old)
	default:
		s.update(old, obj)
	}
}

// update passes an update on, unless the pod is hidden. It runs under
// s.h.mu.
func (s *screening) update(old, obj any) {
	if pod, ok := obj.(*v1.Pod); ok {
		if _, hidden := s.h.hidden[pod.UID]; hidden {
			if pod.Spec.NodeName == "" {
				s.h.hidden[pod.UID] = pod
				return
			}
			// Bound by someone else: the handler counts what it holds.
			delete(s.h.hidden, pod.UID)
			s.h.handler.OnAdd(pod, false)
			return
		}
	}
	s.h.handler.OnUpdate(old, obj)
}

func (s *screening) OnDelete(obj any) {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	seen := s.h.sees(obj)
	if pod, ok := unwrap(obj).(*v1.Pod); ok {
		delete(s.h.shown, pod.UID)
	}
	if seen {
		s.delete(obj)
	}
}

// delete passes a delete on, unless the pod is hidden. It runs under
// s.h.mu.
func (s *screening) delete(obj any) {
	if pod, ok := unwrap(obj).(*v1.Pod); ok {
		if _, hidden := s.h.hidden[pod.UID]; hidden {
			delete(s.h.hidden, pod.UID)
			return
		}
	}
	s.h.handler.OnDelete(obj)
}
