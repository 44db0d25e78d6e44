package gatelift

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/podrequest"
	"github.com/tessera-gpu/tessera/scheduler/view"
	"github.com/tessera-gpu/tessera/scheduler/waiters"
)

const node = "n1"

// fixture is a lifter leading over a view of one node with one 15360 MiB
// GPU, and the fake API it writes to.
type fixture struct {
	kube   *fake.Clientset
	view   *view.View
	clock  *clocktesting.FakeClock
	lifter *Lifter
}

func newFixture(t *testing.T, pods ...*corev1.Pod) *fixture {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Now())
	v := view.New()
	gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: node}}
	gn.Status.Devices = []gpuv1alpha1.GPUDevice{{UUID: "GPU-0", Model: "T4", MemoryMiB: 15360, Cores: 100, ShareLimit: 10, Health: gpuv1alpha1.GPUHealthy}}
	v.SetGPUNode(gn)
	v.SetLease(node, clk.Now())
	kube := fake.NewClientset()
	for _, pod := range pods {
		if _, err := kube.CoreV1().Pods(pod.Namespace).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	factory := informers.NewSharedInformerFactory(kube, 0)
	l, err := New(Config{
		Kube:           kube,
		Pods:           factory.Core().V1().Pods(),
		View:           v,
		Rules:          view.Rules{HeartbeatMaxAge: time.Hour, HAMiCoreMissing: view.HAMiCoreRefuse, CoresResource: gpurequest.DefaultResourceNames().Cores},
		Parser:         podrequest.Parser{ResourceNames: gpurequest.DefaultResourceNames(), DefaultNodePolicy: gpurequest.Binpack, DefaultGPUPolicy: gpurequest.Spread},
		Profile:        "tessera-scheduler",
		FieldManager:   "test",
		Clock:          clk,
		Ready:          func() bool { return true },
		LeaseNamespace: "kube-system",
		LeaseName:      "fit-gate",
	})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(t.Context().Done())
	go l.Run(t.Context())
	return &fixture{kube: kube, view: v, clock: clk, lifter: l}
}

// gatedPod is a gated pod of the profile asking for one GPU with
// memoryMiB of its memory, created at second created.
func gatedPod(name string, memoryMiB, created int64) *corev1.Pod {
	names := gpurequest.DefaultResourceNames()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), CreationTimestamp: metav1.NewTime(time.Unix(created, 0))},
		Spec: corev1.PodSpec{
			SchedulerName:   "tessera-scheduler",
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "other"}, {Name: gpuv1alpha1.FitSchedulingGate}},
			Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				names.Count:  resource.MustParse("1"),
				names.Memory: *resource.NewQuantity(memoryMiB, resource.DecimalSI),
			}}}},
		},
	}
}

// gates returns the pod's scheduling gates as the API holds them.
func (f *fixture) gates(t *testing.T, name string) []string {
	t.Helper()
	pod, err := f.kube.CoreV1().Pods("default").Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range pod.Spec.SchedulingGates {
		names = append(names, g.Name)
	}
	return names
}

// waitLifted waits until the pod's fit gate is lifted, its other gate
// kept.
func (f *fixture) waitLifted(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		gates := f.gates(t, name)
		if len(gates) == 1 && gates[0] == "other" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: gates %v, want [other]", name, gates)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkGated checks, after the lifter had time to lift them, that the
// pods keep their fit gate.
func (f *fixture) checkGated(t *testing.T, names ...string) {
	t.Helper()
	time.Sleep(200 * time.Millisecond)
	for _, name := range names {
		if gates := f.gates(t, name); len(gates) != 2 {
			t.Errorf("%s: gates %v, want the fit gate kept", name, gates)
		}
	}
}

// place records in the view that the pod holds memoryMiB of the GPU.
func (f *fixture) place(pod *corev1.Pod, memoryMiB int64) {
	f.view.Place(&gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: types.UID("alloc-" + pod.Name)},
		Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: pod.UID, NodeName: node, Containers: []gpuv1alpha1.ContainerAllocation{{
			Name: "main", Kind: gpuv1alpha1.ContainerApp, Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-0", MemoryMiB: memoryMiB}},
		}}},
	})
}

// TestLiftsInQueueOrderAsTheRoomHolds checks that of two gated pods the
// GPU holds one of, the older is released and the other held and told
// why, that a pod without GPUs is released at once, and that the free
// after the first pod's cycle releases the second.
func TestLiftsInQueueOrderAsTheRoomHolds(t *testing.T) {
	first, second := gatedPod("first", 10000, 0), gatedPod("second", 10000, 1)
	noGPU := gatedPod("no-gpu", 0, 2)
	noGPU.Spec.Containers[0].Resources.Limits = nil
	f := newFixture(t, second, first, noGPU)
	f.waitLifted(t, "first")
	f.waitLifted(t, "no-gpu")
	f.checkGated(t, "second")
	if got, want := f.told(t, "second"), waiters.HeldPrefix+waiters.Promised; got != want {
		t.Errorf("second told %q, want %q", got, want)
	}

	req, err := f.lifter.cfg.Parser.Parse(first)
	if err != nil {
		t.Fatal(err)
	}
	f.lifter.Started(first, req.Request)
	f.place(first, 10000)
	f.lifter.Ended(first.UID, node)
	f.checkGated(t, "second")

	f.view.Release(first.UID)
	f.lifter.Freed(node)
	f.waitLifted(t, "second")
}

// TestRoomOfAPodWhoseCycleNeverCameGoesOn checks that the room a
// released pod was released for goes to the pod behind it once
// cycleTimeout passes with neither the extender nor the API telling how
// its cycle ended, as while kube-scheduler is down.
func TestRoomOfAPodWhoseCycleNeverCameGoesOn(t *testing.T) {
	first, second := gatedPod("first", 10000, 0), gatedPod("second", 10000, 1)
	f := newFixture(t, first, second)
	f.waitLifted(t, "first")
	f.checkGated(t, "second")
	f.clock.Step(cycleTimeout / 2)
	f.checkGated(t, "second")
	deadline := time.Now().Add(10 * time.Second)
	for f.gatesOf(t, "second") == 2 {
		if time.Now().After(deadline) {
			t.Fatal("second still gated after the first pod's cycle timed out")
		}
		f.clock.Step(cycleTimeout / 4)
		time.Sleep(10 * time.Millisecond)
	}
}

// gatesOf returns how many scheduling gates the pod has.
func (f *fixture) gatesOf(t *testing.T, name string) int {
	return len(f.gates(t, name))
}

// told returns why the pod was told it is held, waiting for the write.
func (f *fixture) told(t *testing.T, name string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pod, err := f.kube.CoreV1().Pods("default").Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				if c.Reason != corev1.PodReasonSchedulingGated {
					t.Errorf("%s: reason %q, want %q", name, c.Reason, corev1.PodReasonSchedulingGated)
				}
				return c.Message
			}
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("nothing (conditions %v)", pod.Status.Conditions)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCycleEndedElsewhereEndsHere checks that the lifter learns from the
// API how the cycle of a pod it released ended, when kube-scheduler asked
// another extender about it: a pod bound there takes no room twice, and
// the room of a pod turned away goes to the pod behind it at once, not
// after cycleTimeout.
func TestCycleEndedElsewhereEndsHere(t *testing.T) {
	t.Run("bound", func(t *testing.T) {
		filler := gatedPod("filler", 10000, 0)
		first, second := gatedPod("first", 5000, 1), gatedPod("second", 10000, 2)
		f := newFixture(t)
		f.place(filler, 10000)
		f.create(t, first, second)
		f.waitLifted(t, "first")
		f.checkGated(t, "second")

		// Bound by another extender: this one hears nothing of its cycle.
		f.place(first, 5000)
		f.update(t, "first", func(pod *corev1.Pod) { pod.Spec.NodeName = node })
		f.waitEnded(t, first.UID)
		f.view.Release(filler.UID)
		f.lifter.Freed(node)
		f.waitLifted(t, "second")
	})
	t.Run("turned away", func(t *testing.T) {
		first, second := gatedPod("first", 10000, 0), gatedPod("second", 10000, 1)
		f := newFixture(t, first, second)
		f.waitLifted(t, "first")
		f.checkGated(t, "second")

		f.update(t, "first", func(pod *corev1.Pod) {
			pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
		})
		f.waitLifted(t, "second")
	})
}

// create creates the pods in the fake API.
func (f *fixture) create(t *testing.T, pods ...*corev1.Pod) {
	t.Helper()
	for _, pod := range pods {
		if _, err := f.kube.CoreV1().Pods(pod.Namespace).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// update changes the pod in the fake API as change says.
func (f *fixture) update(t *testing.T, name string, change func(*corev1.Pod)) {
	t.Helper()
	pod, err := f.kube.CoreV1().Pods("default").Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	change(pod)
	if _, err := f.kube.CoreV1().Pods("default").Update(t.Context(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitEnded waits until the lifter no longer counts the pod's cycle.
func (f *fixture) waitEnded(t *testing.T, uid types.UID) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for f.lifter.inCycle(uid) {
		if time.Now().After(deadline) {
			t.Fatalf("the cycle of %s has not ended", uid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
