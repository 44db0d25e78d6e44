package tracker

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	tesserafake "github.com/tessera-gpu/tessera/generated/clientset/versioned/fake"
	"github.com/tessera-gpu/tessera/generated/informers/externalversions"
	"github.com/tessera-gpu/tessera/scheduler/inflight"
	"github.com/tessera-gpu/tessera/scheduler/liveness"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

var epoch = time.Unix(1_700_000_000, 0)

type fixture struct {
	t       *testing.T
	ctx     context.Context
	tracker *Tracker
	view    *view.View
	gate    *inflight.Gate
	clock   *clocktesting.FakeClock
	kube    *kubefake.Clientset
	tessera *tesserafake.Clientset
	pods    cache.Indexer
	allocs  cache.Indexer
}

// newFixture builds a tracker over fake clients whose informers are not
// started: the test fills their caches and calls the handlers itself.
func newFixture(t *testing.T) *fixture {
	_, ctx := ktesting.NewTestContext(t)
	f := &fixture{t: t, ctx: ctx, view: view.New(), clock: clocktesting.NewFakeClock(epoch),
		kube: kubefake.NewClientset(), tessera: tesserafake.NewClientset()}
	f.gate = inflight.NewGate(f.clock, time.Minute, 0, nil)
	kf := informers.NewSharedInformerFactory(f.kube, 0)
	tf := externalversions.NewSharedInformerFactory(f.tessera, 0)
	var err error
	f.tracker, err = New(ctx, Config{
		View: f.view, Gate: f.gate, Clock: f.clock, Kube: f.kube, Tessera: f.tessera,
		Pods: kf.Core().V1().Pods(), GPUNodes: tf.Gpu().V1alpha1().GPUNodes(), Allocations: tf.Gpu().V1alpha1().GPUAllocations(),
		Leases: kf.Coordination().V1().Leases(), Renewals: liveness.NewRenewals(f.clock),
		SweepInterval: time.Minute, ReservationMaxAge: 2 * time.Minute, HeartbeatMaxAge: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.tracker.orphans.ShutDown)
	f.pods = kf.Core().V1().Pods().Informer().GetIndexer()
	f.allocs = tf.Gpu().V1alpha1().GPUAllocations().Informer().GetIndexer()
	gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	gn.Status.Devices = []gpuv1alpha1.GPUDevice{{UUID: "gpu0", Model: "A100", MemoryMiB: 80000, Cores: 100, ShareLimit: 10, Health: gpuv1alpha1.GPUHealthy}}
	f.tracker.gpuNodeHandler().OnAdd(gn, true)
	return f
}

// lease is node's Lease, last renewed at renewed.
func lease(node string, renewed time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: "tessera-system"},
		Spec:       coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: renewed}},
	}
}

func pod(name string, uid types.UID, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid},
		Spec:       corev1.PodSpec{NodeName: "n1"},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func allocation(name string, uid, podUID types.UID, phase gpuv1alpha1.AllocationPhase) *gpuv1alpha1.GPUAllocation {
	return &gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid, CreationTimestamp: metav1.NewTime(epoch)},
		Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: podUID, NodeName: "n1", Containers: []gpuv1alpha1.ContainerAllocation{{
			Name: "main", Kind: gpuv1alpha1.ContainerApp, Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "gpu0", MemoryMiB: 1000, Cores: 10}},
		}}},
		Status: gpuv1alpha1.GPUAllocationStatus{Phase: phase},
	}
}

// allocationMovedTo is a run in which pod p, in podPhase, gets its
// allocation a1 Pending and then sees it move to phase.
func allocationMovedTo(podPhase corev1.PodPhase, phase gpuv1alpha1.AllocationPhase) func(f *fixture) {
	return func(f *fixture) {
		f.addPod(pod("p", "u1", podPhase))
		f.addAllocation(allocation("p", "a1", "u1", gpuv1alpha1.AllocationPending))
		f.addAllocation(allocation("p", "a1", "u1", phase))
	}
}

// podSucceeded is a run in which pod p, running with its allocation a1
// served, succeeds.
func podSucceeded(f *fixture) {
	f.addPod(pod("p", "u1", corev1.PodRunning))
	f.addAllocation(allocation("p", "a1", "u1", gpuv1alpha1.AllocationAllocated))
	f.tracker.podHandler().OnUpdate(nil, pod("p", "u1", corev1.PodSucceeded))
}

// addPod puts a pod in the cache and the fake API.
func (f *fixture) addPod(p *corev1.Pod) {
	f.pods.Add(p)
	f.kube.Tracker().Add(p)
}

// addAllocation puts an allocation in the cache and the fake API and delivers it.
func (f *fixture) addAllocation(a *gpuv1alpha1.GPUAllocation) {
	f.allocs.Add(a)
	f.tessera.Tracker().Add(a)
	f.tracker.allocationHandler(ktesting.NewLogger(f.t, ktesting.NewConfig())).OnAdd(a, false)
}

func (f *fixture) usedMiB() int64 {
	var used int64
	f.view.Read([]string{"n1"}, "", func(_ string, n *view.Node) { used = n.Placement.Devices[0].UsedMemoryMiB })
	return used
}

func (f *fixture) allocationExists(name string) bool {
	_, err := f.tessera.GpuV1alpha1().GPUAllocations("ns").Get(f.ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		f.t.Fatal(err)
	}
	return err == nil
}

// drainOrphans processes every queued orphan check.
func (f *fixture) drainOrphans() {
	for f.tracker.orphans.Len() > 0 {
		f.tracker.processNextOrphan(f.ctx)
	}
}

// deletePod deletes p from the cache and the fake API and delivers the
// delete.
func (f *fixture) deletePod(p *corev1.Pod) {
	f.pods.Delete(p)
	f.kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), p.Namespace, p.Name)
	f.tracker.podHandler().OnDelete(cache.DeletedFinalStateUnknown{Key: p.Namespace + "/" + p.Name, Obj: p})
}

// drainOrphansAfterDelete checks, before and after collectAfter has
// passed since a pod's delete, for an orphaned allocation to delete.
func (f *fixture) drainOrphansAfterDelete(allocationKept func()) {
	f.drainOrphans()
	allocationKept()
	f.clock.Step(collectAfter)
	// The delaying queue hands the check over on its own goroutine.
	for deadline := time.Now().Add(10 * time.Second); f.tracker.orphans.Len() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			f.t.Fatalf("no orphan check queued %s after the pod's delete", collectAfter)
		}
	}
	f.drainOrphans()
}

func TestTracker(t *testing.T) {
	tests := []struct {
		name          string
		run           func(f *fixture)
		wantUsedMiB   int64
		wantInFlight  bool
		wantAllocGone bool
	}{
		{
			name: "pending allocation holds GPUs and is in flight",
			run: func(f *fixture) {
				f.addPod(pod("p", "u1", corev1.PodPending))
				f.addAllocation(allocation("p", "a1", "u1", gpuv1alpha1.AllocationPending))
			},
			wantUsedMiB: 1000, wantInFlight: true,
		},
		{
			name:        "allocated allocation holds GPUs and ends the turn",
			run:         allocationMovedTo(corev1.PodRunning, gpuv1alpha1.AllocationAllocated),
			wantUsedMiB: 1000,
		},
		{
			name: "failed allocation frees its GPUs and the turn",
			run:  allocationMovedTo(corev1.PodPending, gpuv1alpha1.AllocationFailed),
		},
		{
			name: "pod completion frees its GPUs",
			run:  podSucceeded,
		},
		{
			name: "allocation of a finished pod holds nothing",
			run: func(f *fixture) {
				f.addPod(pod("p", "u1", corev1.PodFailed))
				f.addAllocation(allocation("p", "a1", "u1", gpuv1alpha1.AllocationAllocated))
			},
		},
		{
			name: "pod deletion frees its GPUs and the turn, and deletes the allocation the garbage collector left",
			run: func(f *fixture) {
				p := pod("p", "u1", corev1.PodPending)
				f.addPod(p)
				f.addAllocation(allocation("p", "a1", "u1", gpuv1alpha1.AllocationPending))
				f.deletePod(p)
				f.drainOrphansAfterDelete(func() {
					if !f.allocationExists("p") {
						f.t.Errorf("the allocation was deleted at once, before the garbage collector's turn")
					}
				})
			},
			wantAllocGone: true,
		},
		{
			name: "pod deletion costs no request when the garbage collector deletes the allocation",
			run: func(f *fixture) {
				p := pod("p", "u1", corev1.PodRunning)
				f.addPod(p)
				a := allocation("p", "a1", "u1", gpuv1alpha1.AllocationAllocated)
				f.addAllocation(a)
				f.deletePod(p)
				f.kube.ClearActions()
				f.tessera.ClearActions()
				f.drainOrphansAfterDelete(func() {
					// The garbage collector's delete, as the informer delivers it.
					f.allocs.Delete(a)
					f.tessera.Tracker().Delete(gpuv1alpha1.SchemeGroupVersion.WithResource("gpuallocations"), "ns", "p")
					f.tracker.allocationHandler(ktesting.NewLogger(f.t, ktesting.NewConfig())).OnDelete(a)
				})
				if got := append(f.kube.Actions(), f.tessera.Actions()...); len(got) != 0 {
					f.t.Errorf("the tracker sent %d requests after the pod's delete, want none: %v", len(got), got)
				}
			},
			wantAllocGone: true,
		},
		{
			name: "allocation whose pod is gone counts until it is deleted",
			run: func(f *fixture) {
				f.addAllocation(allocation("p", "a1", "u1", gpuv1alpha1.AllocationAllocated))
				if got := f.usedMiB(); got != 1000 {
					f.t.Errorf("orphan counts %d MiB before deletion, want 1000", got)
				}
				f.drainOrphans()
			},
			wantUsedMiB:   1000, // the informer's delete event frees it
			wantAllocGone: true,
		},
		{
			name: "allocation of an earlier pod of the same name is deleted",
			run: func(f *fixture) {
				f.addPod(pod("p", "u2", corev1.PodPending))
				f.addAllocation(allocation("p", "a1", "u1", gpuv1alpha1.AllocationAllocated))
				f.drainOrphans()
			},
			wantUsedMiB: 1000, wantAllocGone: true,
		},
		{
			name: "allocation whose pod the cache has not seen yet is kept",
			run: func(f *fixture) {
				f.kube.Tracker().Add(pod("p", "u1", corev1.PodPending))
				f.addAllocation(allocation("p", "a1", "u1", gpuv1alpha1.AllocationAllocated))
				f.drainOrphans()
			},
			wantUsedMiB: 1000,
		},
		{
			name: "deleted allocation frees its GPUs",
			run: func(f *fixture) {
				f.addPod(pod("p", "u1", corev1.PodRunning))
				a := allocation("p", "a1", "u1", gpuv1alpha1.AllocationPending)
				f.addAllocation(a)
				f.tracker.allocationHandler(ktesting.NewLogger(f.t, ktesting.NewConfig())).OnDelete(a)
			},
		},
		{
			name: "sweep drops a reservation whose allocation never appeared",
			run: func(f *fixture) {
				f.view.Reserve("u1", "ns", "p", "n1", epoch, func(*view.Node) ([]gpuv1alpha1.ContainerAllocation, error) {
					return allocation("p", "", "u1", "").Spec.Containers, nil
				})
				f.tracker.Sweep(f.ctx)
				if got := f.usedMiB(); got != 1000 {
					f.t.Errorf("a fresh reservation was dropped: %d MiB used", got)
				}
				f.clock.Step(3 * time.Minute)
				f.tracker.Sweep(f.ctx)
			},
			wantAllocGone: true, // there never was one
		},
		{
			name: "sweep keeps an old reservation whose bind still waits for its node's turn",
			run: func(f *fixture) {
				f.view.Reserve("u1", "ns", "p", "n1", epoch, func(*view.Node) ([]gpuv1alpha1.ContainerAllocation, error) {
					return allocation("p", "", "u1", "").Spec.Containers, nil
				})
				if err := f.gate.Acquire(f.ctx, "n1", "other", 0); err != nil {
					f.t.Fatal(err)
				}
				waiting := make(chan error, 1)
				go func() { waiting <- f.gate.Acquire(f.ctx, "n1", "u1", 0) }()
				for deadline := time.Now().Add(10 * time.Second); f.gate.Waiting("n1") != 1; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						f.t.Fatal("the bind never queued for its node's turn")
					}
				}
				f.clock.Step(3 * time.Minute)
				f.tracker.Sweep(f.ctx)
				if got := f.usedMiB(); got != 1000 {
					f.t.Errorf("the reservation of a waiting bind was dropped: %d MiB used", got)
				}
				// Its turn comes and goes with no allocation written.
				f.gate.Release("n1", "other")
				if err := <-waiting; err != nil {
					f.t.Fatal(err)
				}
				f.gate.Release("n1", "u1")
				f.tracker.Sweep(f.ctx)
			},
			wantAllocGone: true, // there never was one
		},
		{
			name: "sweep places an old reservation whose allocation the cache has not seen yet",
			run: func(f *fixture) {
				f.view.Reserve("u1", "ns", "p", "n1", epoch, func(*view.Node) ([]gpuv1alpha1.ContainerAllocation, error) {
					return allocation("p", "", "u1", "").Spec.Containers, nil
				})
				f.tessera.Tracker().Add(allocation("p", "a1", "u1", gpuv1alpha1.AllocationPending))
				f.clock.Step(3 * time.Minute)
				f.tracker.Sweep(f.ctx)
				if p, ok := f.view.Pod("u1"); !ok || p.AllocationUID != "a1" {
					f.t.Errorf("the pod holds %+v, want the allocation a1", p)
				}
			},
			wantUsedMiB: 1000,
		},
		{
			name: "sweep finds orphans the events missed",
			run: func(f *fixture) {
				a := allocation("p", "a1", "u1", gpuv1alpha1.AllocationAllocated)
				f.allocs.Add(a)
				f.tessera.Tracker().Add(a)
				f.tracker.Sweep(f.ctx)
				f.drainOrphans()
			},
			wantAllocGone: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.run(f)
			if got := f.usedMiB(); got != tc.wantUsedMiB {
				t.Errorf("used %d MiB, want %d", got, tc.wantUsedMiB)
			}
			if _, got := f.gate.InFlight("n1"); got != tc.wantInFlight {
				t.Errorf("in flight = %v, want %v", got, tc.wantInFlight)
			}
			if gone := !f.allocationExists("p"); gone != tc.wantAllocGone {
				t.Errorf("allocation gone = %v, want %v", gone, tc.wantAllocGone)
			}
		})
	}
}
