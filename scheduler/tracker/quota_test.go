package tracker

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/generated/informers/externalversions"
	"github.com/tessera-gpu/tessera/scheduler/quota"
)

// quotaRecorder records the namespaces whose quota may have room.
type quotaRecorder struct{ freed []string }

func (r *quotaRecorder) QuotaFreed(namespace string) { r.freed = append(r.freed, namespace) }

// gpuQuota is a ResourceQuota in namespace team-a with a GPU memory limit,
// and the CPU limit given.
func gpuQuota(memory, cpu string) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "gpus", Namespace: "team-a"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			quota.KeyMemory: resource.MustParse(memory), "requests.cpu": resource.MustParse(cpu),
		}},
	}
}

// quotaAdded, quotaUpdated and quotaDeleted are runs that hand the quota
// handler one ResourceQuota event.
func quotaAdded(q *corev1.ResourceQuota) func(*fixture, cache.ResourceEventHandler) {
	return func(_ *fixture, h cache.ResourceEventHandler) { h.OnAdd(q, false) }
}

func quotaUpdated(old, cur *corev1.ResourceQuota) func(*fixture, cache.ResourceEventHandler) {
	return func(_ *fixture, h cache.ResourceEventHandler) { h.OnUpdate(old, cur) }
}

func quotaDeleted(obj any) func(*fixture, cache.ResourceEventHandler) {
	return func(_ *fixture, h cache.ResourceEventHandler) { h.OnDelete(obj) }
}

func TestTrackerTellsQuotaRequeue(t *testing.T) {
	cpuOnly := gpuQuota("1", "4")
	delete(cpuOnly.Spec.Hard, quota.KeyMemory)
	cpuRaised := cpuOnly.DeepCopy()
	cpuRaised.Spec.Hard["requests.cpu"] = resource.MustParse("8")
	counted := gpuQuota("40000", "4")
	counted.Status.Used = corev1.ResourceList{quota.KeyMemory: resource.MustParse("1000")}
	tests := []struct {
		name string
		run  func(f *fixture, h cache.ResourceEventHandler)
		want []string
	}{
		{
			name: "a pod deleted frees its namespace's quota",
			run: func(f *fixture, _ cache.ResourceEventHandler) {
				p := pod("p", "u1", corev1.PodRunning)
				f.addPod(p)
				f.addAllocation(allocation("p", "a1", "u1", gpuv1alpha1.AllocationAllocated))
				f.tracker.podHandler().OnDelete(p)
			},
			want: []string{"ns"},
		},
		{
			name: "an allocation failed frees its namespace's quota",
			run: func(f *fixture, _ cache.ResourceEventHandler) {
				allocationMovedTo(corev1.PodPending, gpuv1alpha1.AllocationFailed)(f)
			},
			want: []string{"ns"},
		},
		{
			name: "a GPU quota raised",
			run:  quotaUpdated(gpuQuota("40000", "4"), gpuQuota("60000", "4")),
			want: []string{"team-a"},
		},
		{
			name: "a GPU quota deleted",
			run:  quotaDeleted(cache.DeletedFinalStateUnknown{Obj: gpuQuota("40000", "4")}),
			want: []string{"team-a"},
		},
		{
			name: "a GPU quota lowered may change what waits, and is told too",
			run:  quotaUpdated(gpuQuota("40000", "4"), gpuQuota("20000", "4")),
			want: []string{"team-a"},
		},
		{
			name: "a GPU quota created only lowers limits",
			run:  quotaAdded(gpuQuota("40000", "4")),
		},
		{
			name: "what the quota controller counts changes nothing",
			run:  quotaUpdated(gpuQuota("40000", "4"), counted),
		},
		{
			name: "a quota on other resources changes nothing",
			run:  quotaUpdated(cpuOnly, cpuRaised),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			r := &quotaRecorder{}
			f.tracker.quotaRequeue = r
			tc.run(f, f.tracker.quotaHandler())
			if !slices.Equal(r.freed, tc.want) {
				t.Errorf("quota freed in %q, want %q", r.freed, tc.want)
			}
		})
	}
}

// TestTrackerWaitsForQuotas pins that the view is not synced until the
// ResourceQuotas are read: a scheduler that started placing pods before
// would ignore every quota.
func TestTrackerWaitsForQuotas(t *testing.T) {
	f := newFixture(t)
	kf := informers.NewSharedInformerFactory(f.kube, 0)
	tf := externalversions.NewSharedInformerFactory(f.tessera, 0)
	tr, err := New(f.ctx, Config{
		View: f.view, Gate: f.gate, Clock: f.clock, Kube: f.kube, Tessera: f.tessera,
		Pods: kf.Core().V1().Pods(), GPUNodes: tf.Gpu().V1alpha1().GPUNodes(), Allocations: tf.Gpu().V1alpha1().GPUAllocations(),
		Leases: kf.Coordination().V1().Leases(), Quotas: kf.Core().V1().ResourceQuotas(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.orphans.ShutDown)
	ctx, cancel := context.WithTimeout(f.ctx, time.Minute)
	defer cancel()
	// Every informer but the ResourceQuotas' runs and syncs.
	for _, inf := range []cache.SharedIndexInformer{kf.Core().V1().Pods().Informer(), kf.Coordination().V1().Leases().Informer(),
		tf.Gpu().V1alpha1().GPUNodes().Informer(), tf.Gpu().V1alpha1().GPUAllocations().Informer()} {
		go inf.RunWithContext(ctx)
		cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	}
	if tr.HasSynced() {
		t.Error("HasSynced before the ResourceQuotas are read, want false")
	}
	go kf.Core().V1().ResourceQuotas().Informer().RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), tr.HasSynced) {
		t.Error("HasSynced stays false once the ResourceQuotas are read")
	}
}
