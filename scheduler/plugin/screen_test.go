package plugin

import (
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// recorder records the events a handler is given, as "add a", "delete a".
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) record(what string, obj any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, what+" "+unwrap(obj).(*v1.Pod).Name)
}

func (r *recorder) OnAdd(obj any, _ bool) { r.record("add", obj) }
func (r *recorder) OnUpdate(_, obj any)   { r.record("update", obj) }
func (r *recorder) OnDelete(obj any)      { r.record("delete", obj) }
func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}
func screenPod(name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)}}
}

// runScreen runs a screen over a store, with one gate that holds the
// pods hold says, and one handler, recorded by rec, wrapped as handler.
func runScreen(t *testing.T) (store cache.Store, hold func(*v1.Pod, bool), rec *recorder, handler cache.ResourceEventHandler) {
	store = cache.NewStore(cache.MetaNamespaceKeyFunc)
	s := NewScreen()
	s.store = store
	var mu sync.Mutex
	held := map[types.UID]bool{}
	s.follow(func(uid types.UID) bool { mu.Lock(); defer mu.Unlock(); return held[uid] })
	hold = func(pod *v1.Pod, h bool) {
		mu.Lock()
		held[pod.UID] = h
		mu.Unlock()
		s.held(pod, h)
	}
	rec = &recorder{}
	handler = s.wrap(rec)
	go s.run(t.Context())
	return store, hold, rec, handler
}

// TestScreenHidesHeldPodsUntilReleased: a pod a gate holds reaches the
// handler as deleted and, once released, as added in its latest form;
// events about it meanwhile do not reach the handler, nor does a pod
// held before the handler ever saw it.
func TestScreenHidesHeldPodsUntilReleased(t *testing.T) {
	store, hold, rec, handler := runScreen(t)

	a, b := screenPod("a"), screenPod("b")
	if err := store.Add(a); err != nil {
		t.Fatal(err)
	}
	handler.OnAdd(a, true)
	hold(a, true)
	waitEvents(t, rec, "add a", "delete a")

	edited := a.DeepCopy()
	edited.Annotations = map[string]string{"edited": "yes"}
	handler.OnUpdate(a, edited)
	hold(b, true)
	handler.OnAdd(b, false)
	handler.OnDelete(b)
	hold(a, false)
	waitEvents(t, rec, "add a", "delete a", "add a")
	rec.mu.Lock()
	if got := len(rec.events); got != 3 {
		t.Errorf("events %v", rec.events)
	}
	rec.mu.Unlock()

	// Shown again, the pod passes as any other.
	handler.OnUpdate(edited, edited)
	handler.OnDelete(edited)
	waitEvents(t, rec, "add a", "delete a", "add a", "update a", "delete a")
}

// TestScreenShowsAPodBoundWhileHidden: a hidden pod that someone binds
// reaches the handler, which counts what bound pods hold.
func TestScreenShowsAPodBoundWhileHidden(t *testing.T) {
	s := NewScreen()
	s.store = cache.NewStore(cache.MetaNamespaceKeyFunc)
	s.follow(func(types.UID) bool { return true })
	rec := &recorder{}
	handler := s.wrap(rec)
	pod := screenPod("a")
	handler.OnAdd(pod, false)
	bound := pod.DeepCopy()
	bound.Spec.NodeName = "node-1"
	handler.OnUpdate(pod, bound)
	if got := rec.seen(); fmt.Sprint(got) != "[add a]" {
		t.Errorf("events %v, want the bound pod added", got)
	}
}

// TestScreenKeepsParkedAndEndedPodsFromTheHandler: kube-scheduler's
// handler hears of the informer's pods as kube-scheduler's own informer,
// which leaves out ended pods, and a parking informer, which left out
// parked ones, would tell them: a pod parked or ended is deleted, one
// unparked is added, and nothing is heard of a pod while it is parked or
// ended, nor when a gate hides a parked pod.
func TestScreenKeepsParkedAndEndedPodsFromTheHandler(t *testing.T) {
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	s := NewScreen()
	s.store = store
	rec := &recorder{}
	handler := s.wrap(rec)

	park := func(pod *v1.Pod, parked bool) *v1.Pod {
		pod = pod.DeepCopy()
		pod.Labels = nil
		if parked {
			pod.Labels = map[string]string{gpuv1alpha1.ParkedLabel: "true"}
		}
		return pod
	}
	a := screenPod("a")
	parkedA := park(a, true)
	handler.OnAdd(a, true)
	handler.OnUpdate(a, parkedA)
	edited := parkedA.DeepCopy()
	edited.Annotations = map[string]string{"edited": "yes"}
	handler.OnUpdate(parkedA, edited)
	// A gate holding the parked pod hides nothing more.
	if err := store.Add(edited); err != nil {
		t.Fatal(err)
	}
	s.handlers[0].hide(store, screenOp{key: cache.MetaObjectToName(edited), uid: a.UID, hide: true})
	unparked := park(edited, false)
	handler.OnUpdate(edited, unparked)

	b := screenPod("b")
	b.Spec.NodeName = "node-1"
	handler.OnAdd(b, false)
	ended := b.DeepCopy()
	ended.Status.Phase = v1.PodSucceeded
	handler.OnUpdate(b, ended)
	handler.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/b", Obj: ended})

	c := park(screenPod("c"), true)
	handler.OnAdd(c, true)
	handler.OnDelete(c)

	if got := rec.seen(); fmt.Sprint(got) != "[add a delete a add a add b delete b]" {
		t.Errorf("events %v, want a added, deleted as parked, added as unparked, and b added and deleted as ended", got)
	}
}

// TestScreenShowsAParkedPodOnRelease: a parked pod a gate releases is
// added to the handler at once, before the write that takes its label
// off; that write then reaches the handler as an update, as does a bind
// that comes before it. Held again before the label is off, the pod is
// deleted, and the update that takes the label off is hidden.
func TestScreenShowsAParkedPodOnRelease(t *testing.T) {
	store, hold, rec, handler := runScreen(t)

	parkedPod := func(name string) (parked, unparked *v1.Pod) {
		unparked = screenPod(name)
		parked = unparked.DeepCopy()
		parked.Labels = map[string]string{gpuv1alpha1.ParkedLabel: "true"}
		if err := store.Add(parked); err != nil {
			t.Fatal(err)
		}
		handler.OnAdd(parked, true)
		return parked, unparked
	}
	bind := func(pod *v1.Pod) *v1.Pod {
		pod = pod.DeepCopy()
		pod.Spec.NodeName = "node-1"
		return pod
	}

	// Released, then its label comes off, then it is bound.
	a, unparkedA := parkedPod("a")
	hold(a, false)
	waitEvents(t, rec, "add a")
	handler.OnUpdate(a, unparkedA)
	handler.OnUpdate(unparkedA, bind(unparkedA))

	// Released, then bound before its label comes off.
	b, unparkedB := parkedPod("b")
	hold(b, false)
	waitEvents(t, rec, "add a", "update a", "update a", "add b")
	handler.OnUpdate(b, bind(b))
	handler.OnUpdate(bind(b), bind(unparkedB))

	// Released, then held again before its label comes off.
	c, unparkedC := parkedPod("c")
	hold(c, false)
	waitEvents(t, rec, "add a", "update a", "update a", "add b", "update b", "update b", "add c")
	hold(c, true)
	waitEvents(t, rec, "add a", "update a", "update a", "add b", "update b", "update b", "add c", "delete c")
	handler.OnUpdate(c, unparkedC)
	if err := store.Update(unparkedC); err != nil {
		t.Fatal(err)
	}
	hold(c, false)
	waitEvents(t, rec, "add a", "update a", "update a", "add b", "update b", "update b", "add c", "delete c", "add c")
}

// TestScreenShowsBoundPodsThoughParked: kube-scheduler counts what bound
// pods hold, so a bound pod is added to the handler with the parked
// label on.
func TestScreenShowsBoundPodsThoughParked(t *testing.T) {
	s := NewScreen()
	s.store = cache.NewStore(cache.MetaNamespaceKeyFunc)
	rec := &recorder{}
	handler := s.wrap(rec)
	pod := screenPod("a")
	pod.Labels = map[string]string{gpuv1alpha1.ParkedLabel: "true"}
	pod.Spec.NodeName = "node-1"
	handler.OnAdd(pod, true)
	if got := rec.seen(); fmt.Sprint(got) != "[add a]" {
		t.Errorf("events %v, want the bound pod added", got)
	}
}

func waitEvents(t *testing.T, rec *recorder, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := rec.seen()
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("events %v, want %v", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
