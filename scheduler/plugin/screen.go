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
// judged them.
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
// handler never hears of a parked or ended pod, as if the informer left
// them out (kube-scheduler's own leaves ended pods out), nor of a pod a
// gate holds. The informer itself holds every pod, for Tessera's view to
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
					h.show(op.uid)
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
	h := &screenedHandler{handler: handler, hidden: map[types.UID]*v1.Pod{}}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers = append(s.handlers, h)
	return cache.FilteringResourceEventHandler{FilterFunc: schedulerSees, Handler: &screening{h: h, screen: s}}
}

// schedulerSees reports whether kube-scheduler's handlers hear of the
// pod: one parked or ended is deleted to them.
func schedulerSees(obj any) bool {
	pod, ok := unwrap(obj).(*v1.Pod)
	return !ok || !parked(pod) && !tracker.PodDone(pod)
}

// screenedHandler is a handler and the pods hidden from it, each as last
// seen. Its lock orders the informer's events and the screen's hides and
// shows into one sequence.
type screenedHandler struct {
	handler cache.ResourceEventHandler
	mu      sync.Mutex
	hidden  map[types.UID]*v1.Pod
}

// hide tells the handler that the pod, as the store holds it, is deleted,
// unless it is hidden, gone, bound, parked or ended.
func (h *screenedHandler) hide(store cache.Store, op screenOp) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, hidden := h.hidden[op.uid]; hidden {
		return
	}
	obj, ok, err := store.GetByKey(op.key.String())
	if err != nil || !ok {
		return
	}
	pod, ok := obj.(*v1.Pod)
	if !ok || pod.UID != op.uid || pod.Spec.NodeName != "" || !schedulerSees(pod) {
		return
	}
	h.hidden[op.uid] = pod
	h.handler.OnDelete(pod)
}

// show tells the handler that the hidden pod is added, as last seen.
func (h *screenedHandler) show(uid types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	pod, hidden := h.hidden[uid]
	if !hidden {
		return
	}
	delete(h.hidden, uid)
	h.handler.OnAdd(pod, false)
}

// screening passes the informer's events to a screened handler, but for
// the pods hidden from it.
type screening struct {
	h      *screenedHandler
	screen *Screen
}

func (s *screening) OnAdd(obj any, isInInitialList bool) {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if pod, ok := obj.(*v1.Pod); ok && pod.Spec.NodeName == "" && s.screen.holds(pod.UID) {
		s.h.hidden[pod.UID] = pod
		return
	}
	s.h.handler.OnAdd(obj, isInInitialList)
}

func (s *screening) OnUpdate(old, obj any) {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
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
	if pod, ok := unwrap(obj).(*v1.Pod); ok {
		if _, hidden := s.h.hidden[pod.UID]; hidden {
			delete(s.h.hidden, pod.UID)
			return
		}
	}
	s.h.handler.OnDelete(obj)
}
