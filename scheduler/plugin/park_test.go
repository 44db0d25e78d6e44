package plugin

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/waiters"
)

// parkFixture runs a parker over a fake API, with the gate's memory of
// which pods it holds kept in held and judged telling which pods the
// parker asked the gate about.
type parkFixture struct {
	kube    *kubefake.Clientset
	parker  *parker
	leading chan struct{}

	mu     sync.Mutex
	known  map[types.UID]bool
	held   map[types.UID]bool
	judged []string
	// holdJudged is whether the gate holds a pod it is asked about.
	holdJudged bool
}

func newParkFixture(t *testing.T, pods ...*v1.Pod) *parkFixture {
	t.Helper()
	ctx := t.Context()
	f := &parkFixture{leading: make(chan struct{}), known: map[types.UID]bool{}, held: map[types.UID]bool{}}
	f.kube = kubefake.NewClientset()
	for _, p := range pods {
		if _, err := f.kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	factory := informers.NewSharedInformerFactory(f.kube, 0)
	podInformer := factory.Core().V1().Pods()
	f.parker = newParker(f.kube, podInformer.Lister(), f.leading, nil)
	f.parker.after = 10 * time.Millisecond
	f.parker.holds = func(uid types.UID) (bool, bool) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.known[uid], f.held[uid]
	}
	f.parker.judge = func(pod *v1.Pod) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.judged = append(f.judged, pod.Name)
		f.known[pod.UID], f.held[pod.UID] = true, f.holdJudged
	}
	f.parker.release = func(uid types.UID) {
		f.mu.Lock()
		f.held[uid] = false
		f.mu.Unlock()
		pod, err := podInformer.Lister().Pods("default").Get(string(uid[:len(uid)-len("-uid")]))
		if err == nil {
			f.parker.held(pod, false)
		}
	}
	f.parker.adoptAll = func(pods []*v1.Pod, judge func(*v1.Pod)) {
		for _, pod := range pods {
			judge(pod)
		}
	}
	reg, err := podInformer.Informer().AddEventHandler(f.parker.handler())
	if err != nil {
		t.Fatal(err)
	}
	f.parker.ready = reg.HasSynced
	factory.Start(ctx.Done())
	go f.parker.run(ctx)
	return f
}

// hold tells the parker that the gate holds the pod, or no longer.
func (f *parkFixture) hold(pod *v1.Pod, held bool) {
	f.mu.Lock()
	f.known[pod.UID], f.held[pod.UID] = true, held
	f.mu.Unlock()
	f.parker.held(pod, held)
}

// waitParked waits until the pod's label says parked, or not.
func (f *parkFixture) waitParked(t *testing.T, name string, parked bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		return f.parked(t, name) == parked, nil
	})
	if err != nil {
		t.Fatalf("pod %s: parked is %v, want %v", name, !parked, parked)
	}
}

func (f *parkFixture) parked(t *testing.T, name string) bool {
	t.Helper()
	pod, err := f.kube.CoreV1().Pods("default").Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod.Labels[gpuv1alpha1.ParkedLabel] != ""
}

func parkPod(name string, labels map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid"), Labels: labels}}
}

var parkedLabels = map[string]string{gpuv1alpha1.ParkedLabel: "true"}

func TestParkerParksHeldPodsAndUnparksReleasedOnes(t *testing.T) {
	held := parkPod("held", nil)
	f := newParkFixture(t, held)
	f.hold(held, true)
	// Not before the scheduler leads.
	time.Sleep(100 * time.Millisecond)
	if f.parked(t, "held") {
		t.Fatal("a scheduler that does not lead parked a pod")
	}
	close(f.leading)
	f.waitParked(t, "held", true)
	f.hold(held, false)
	f.waitParked(t, "held", false)
}

func TestParkerDoesNotParkAPodReleasedWithinParkAfter(t *testing.T) {
	pod := parkPod("brief", nil)
	f := newParkFixture(t, pod)
	f.parker.after = 200 * time.Millisecond
	close(f.leading)
	f.hold(pod, true)
	f.hold(pod, false)
	time.Sleep(400 * time.Millisecond)
	if f.parked(t, "brief") {
		t.Error("a pod released before parkAfter was parked")
	}
	if a := f.kube.Actions(); len(a) > 0 && a[len(a)-1].GetVerb() == "patch" {
		t.Errorf("wrote %v for a pod released before parkAfter", a[len(a)-1])
	}
}

func TestParkerJudgesParkedPodsItDoesNotKnow(t *testing.T) {
	stillHeld := parkPod("still-held", parkedLabels)
	fits := parkPod("fits", parkedLabels)
	bound := parkPod("bound", parkedLabels)
	bound.Spec.NodeName = "node-1"
	f := newParkFixture(t, stillHeld, bound)
	f.holdJudged = true
	close(f.leading)
	// A bound pod is unparked whatever the gate says; it is not judged.
	f.waitParked(t, "bound", false)
	f.mu.Lock()
	f.holdJudged = false
	f.mu.Unlock()
	if _, err := f.kube.CoreV1().Pods("default").Create(t.Context(), fits, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitParked(t, "fits", false)
	if !f.parked(t, "still-held") {
		t.Error("a parked pod the gate still holds was unparked")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.judged) != 2 || f.judged[0] != "still-held" || f.judged[1] != "fits" {
		t.Errorf("judged %v, want [still-held fits]", f.judged)
	}
}

// TestParkerDoesNotJudgeAPodItReleasedWhileItsLabelLags releases a
// parked pod whose unpark fails at first, as while kube-apiserver
// restarts, and has the requeuer forget it meanwhile, as it does once the
// pod is placed: the pod is still labelled and pending, but the parker
// does not ask the gate about it, which could hold it while
// kube-scheduler binds it, and takes the label off once the API serves.
func TestParkerDoesNotJudgeAPodItReleasedWhileItsLabelLags(t *testing.T) {
	pod := parkPod("placed", parkedLabels)
	f := newParkFixture(t, pod)
	f.holdJudged = true
	var refused atomic.Int32
	f.kube.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refused.Add(1) <= 3 {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	f.hold(pod, true)
	close(f.leading)
	f.hold(pod, false)
	// Placed: the requeuer forgets it.
	f.mu.Lock()
	delete(f.known, pod.UID)
	f.mu.Unlock()
	f.waitParked(t, "placed", false)
	if refused.Load() <= 3 {
		t.Fatalf("the label came off after %d patches; the test wants it refused 3 times first", refused.Load())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.judged) > 0 {
		t.Errorf("judged %v, a pod the scheduler released and placed", f.judged)
	}
}

func TestParkerReleasesAParkedPodWhoseRequestChanges(t *testing.T) {
	pod := parkPod("edited", nil)
	f := newParkFixture(t, pod)
	close(f.leading)
	f.hold(pod, true)
	f.waitParked(t, "edited", true)

	// What the scheduler writes on a held pod, its reason, changes no request.
	got, err := f.kube.CoreV1().Pods("default").Get(t.Context(), "edited", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Status.Conditions = append(got.Status.Conditions, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Message: "held"})
	if got, err = f.kube.CoreV1().Pods("default").UpdateStatus(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if !f.parked(t, "edited") {
		t.Fatal("a parked pod whose status changed was unparked")
	}

	got.Annotations = map[string]string{"gpu.tessera.dev/memory": "1000"}
	if _, err := f.kube.CoreV1().Pods("default").Update(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitParked(t, "edited", false)
}

// TestParkerUnparksAheadOfParks holds more pods than there are parking
// workers while parking is slow, and checks that a parked pod released is
// unparked before the pods held after it are parked: it does not wait its
// turn behind them.
func TestParkerUnparksAheadOfParks(t *testing.T) {
	first := parkPod("first", nil)
	pods := []*v1.Pod{first}
	for i := range 4 * parkWorkers {
		pods = append(pods, parkPod(fmt.Sprintf("later-%02d", i), nil))
	}
	f := newParkFixture(t, pods...)
	f.parker.pace = waiters.NewPace(nil, 2, 2)
	close(f.leading)
	f.hold(first, true)
	f.waitParked(t, "first", true)
	for _, pod := range pods[1:] {
		f.hold(pod, true)
	}
	time.Sleep(50 * time.Millisecond) // past parkAfter: the later pods wait to be parked
	f.hold(first, false)
	f.waitParked(t, "first", false)
	parked := 0
	for _, pod := range pods[1:] {
		if f.parked(t, pod.Name) {
			parked++
		}
	}
	if parked > parkWorkers {
		t.Errorf("%d of the %d pods held later were parked before the released pod was unparked", parked, len(pods)-1)
	}
}
