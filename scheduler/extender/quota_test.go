package extender

import (
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/tessera-gpu/tessera/scheduler/metrics"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/quota"
)

func limit(hard int64) quota.Limit { return quota.Limit{Hard: hard, Set: true, Quota: "gpu"} }

// sameReason is the unresolvable reasons of nodes that all give reason.
func sameReason(reason string, nodes ...string) map[string]string {
	reasons := make(map[string]string, len(nodes))
	for _, node := range nodes {
		reasons[node] = reason
	}
	return reasons
}

// quotaRequeue records what the extender tells the requeuer of quotas.
type quotaRequeue struct {
	pods   []string
	admits []func(placement.Use) (placement.Use, bool)
}

func (r *quotaRequeue) QuotaFreed(string) {}

func (r *quotaRequeue) OverQuota(pod *corev1.Pod, _ time.Time, admits func(placement.Use) (placement.Use, bool)) {
	r.pods = append(r.pods, pod.Name)
	r.admits = append(r.admits, admits)
}

func TestFilterQuota(t *testing.T) {
	nodes := []string{"a100-1", "t4", "stale"}
	tests := []struct {
		name             string
		limits           quota.Limits
		pod              *corev1.Pod
		wantFeasible     []string
		wantUnresolvable map[string]string
	}{
		{
			name:         "a namespace without quota is not limited",
			pod:          podSpec("p", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem-percentage=50"),
			wantFeasible: []string{"a100-1", "t4"},
		},
		{
			name:         "a percentage fits the quota on a small GPU and not on a large one",
			limits:       quota.Limits{MemoryMiB: limit(30000)},
			pod:          podSpec("p", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem-percentage=50"),
			wantFeasible: []string{"t4"},
			wantUnresolvable: map[string]string{
				"a100-1": "namespace ns would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/memory (GPU memory in MiB): used 10000, asked 40000, limit 30000",
			},
		},
		{
			name:             "a quota without room for the least asked closes every node",
			limits:           quota.Limits{GPUs: limit(1)},
			pod:              podSpec("p", nil, "nvidia.com/gpu=1"),
			wantUnresolvable: sameReason("namespace ns would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/gpus (GPUs): used 1, asked 1, limit 1", "a100-1", "t4"),
		},
		{
			name:             "a whole GPU counts 100 cores",
			limits:           quota.Limits{Cores: limit(100)},
			pod:              podSpec("p", nil, "nvidia.com/gpu=1"),
			wantUnresolvable: sameReason("namespace ns would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/cores (GPU compute in percent of one GPU): used 20, asked 100, limit 100", "a100-1", "t4"),
		},
		{
			name:             "a slice without compute is refused where a quota limits compute",
			limits:           quota.Limits{Cores: limit(1000)},
			pod:              podSpec("p", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=1000"),
			wantUnresolvable: sameReason("namespace ns limits GPU compute (ResourceQuota gpu on requests.gpu.tessera.dev/cores): must specify nvidia.com/gpucores for: main", "a100-1", "t4"),
		},
		{
			name:         "a slice with compute is not",
			limits:       quota.Limits{Cores: limit(1000)},
			pod:          podSpec("p", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=1000", "nvidia.com/gpucores=10"),
			wantFeasible: []string{"a100-1", "t4"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.ext.Quotas = quota.Fixed{"ns": tc.limits}
			f.place("held", "uid-held", "a100-2-gpu0", 10000, 20)
			names := append([]string(nil), nodes...)
			result, _ := f.filter(&extenderv1.ExtenderArgs{Pod: tc.pod, NodeNames: &names})
			if got := strings.Join(*result.NodeNames, ","); got != strings.Join(tc.wantFeasible, ",") {
				t.Errorf("feasible = %q, want %v; failed %v, unresolvable %v", got, tc.wantFeasible, result.FailedNodes, result.FailedAndUnresolvableNodes)
			}
			for node, want := range tc.wantUnresolvable {
				if got := result.FailedAndUnresolvableNodes[node]; got != want {
					t.Errorf("node %s: %q, want %q", node, got, want)
				}
			}
			if !strings.Contains(result.FailedAndUnresolvableNodes["stale"], "heartbeat") {
				t.Errorf("a stale node says %q, want its heartbeat first", result.FailedAndUnresolvableNodes["stale"])
			}
		})
	}
}

// TestQuotaRequeueIsTold pins that a pod the quota turned away is handed
// to the requeuer with what it asked where it was turned away, so that it
// is retried only when the quota has room for that.
func TestQuotaRequeueIsTold(t *testing.T) {
	f := newFixture(t)
	f.ext.Quotas = quota.Fixed{"ns": {MemoryMiB: limit(30000)}}
	r := &quotaRequeue{}
	f.ext.QuotaRequeue = r
	held := f.place("held", "uid-held", "a100-2-gpu0", 20000, 0)
	names := []string{"a100-1", "t4"}
	f.filter(&extenderv1.ExtenderArgs{Pod: podSpec("fits", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=5000"), NodeNames: &names})
	f.filter(&extenderv1.ExtenderArgs{Pod: podSpec("big", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem-percentage=80"), NodeNames: &names})
	if len(r.pods) != 1 || r.pods[0] != "big" {
		t.Fatalf("requeuer told of %v, want only the pod over its quota", r.pods)
	}
	// 80% of a T4, the least it asked, is 12000 MiB.
	if asked, ok := r.admits[0](placement.Use{}); ok || asked.MemoryMiB != 12000 {
		t.Errorf("admits = %+v, %v; want 12000 MiB that does not fit 10000 MiB left", asked, ok)
	}
	f.view.ReleaseAllocation(held)
	if _, ok := r.admits[0](placement.Use{}); !ok {
		t.Error("admits = false once the namespace freed 20000 MiB, want true")
	}
	if _, ok := r.admits[0](placement.Use{MemoryMiB: 20000}); ok {
		t.Error("admits = true beside 20000 MiB taken by pods poked before, want false")
	}
}

// TestBindQuotaConcurrently binds two pods of a namespace at once on two
// nodes, with room in the quota for one: one is bound, the other is
// refused with the quota's reason and leaves nothing written or held.
func TestBindQuotaConcurrently(t *testing.T) {
	for range 20 {
		f := newFixture(t)
		f.ext.Quotas = quota.Fixed{"ns": {MemoryMiB: limit(60000)}}
		f.place("held", "uid-held", "t4-gpu0", 10000, 0)
		pods := []*corev1.Pod{
			f.addPod(podSpec("p1", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem-percentage=50")),
			f.addPod(podSpec("p2", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem-percentage=50")),
		}
		var wg sync.WaitGroup
		errs := make([]error, len(pods))
		for i, node := range []string{"a100-1", "a100-2"} {
			wg.Go(func() { _, errs[i] = f.ext.Bind(t.Context(), bindArgs(pods[i], node)) })
		}
		wg.Wait()
		bound := 0
		for i, err := range errs {
			_, getErr := f.tessera.GpuV1alpha1().GPUAllocations("ns").Get(t.Context(), pods[i].Name, metav1.GetOptions{})
			switch {
			case err == nil:
				bound++
			case !strings.Contains(err.Error(), "namespace ns would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/memory (GPU memory in MiB): used 50000, asked 40000, limit 60000"):
				t.Errorf("pod %s refused with %v, want the quota's reason", pods[i].Name, err)
			case !apierrors.IsNotFound(getErr):
				t.Errorf("pod %s was refused but has an allocation (%v)", pods[i].Name, getErr)
			}
		}
		if bound != 1 || f.view.Used("ns").MemoryMiB != 50000 {
			t.Fatalf("%d pods bound, %+v used; want one, 50000 MiB", bound, f.view.Used("ns"))
		}
	}
}

// TestPreemptEvictsNoneForQuota pins that preemption keeps no node where
// the pod's namespace's quota has no room for it: evicting the namespace's
// own pods there would make room, but no pod is evicted for a quota.
func TestPreemptEvictsNoneForQuota(t *testing.T) {
	f := newFixture(t)
	f.ext.Quotas = quota.Fixed{"ns": {MemoryMiB: limit(12000)}}
	f.place("low-a", "uid-low-a", "t4-gpu0", 10000, 0)
	result, outcome, err := f.ext.Preempt(t.Context(), &extenderv1.ExtenderPreemptionArgs{
		Pod:                   podSpec("high", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=12000"),
		NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{"t4": victimsOf(0, "low-a")},
	})
	if err != nil || outcome != metrics.ResultUnschedulable || len(result.NodeNameToMetaVictims) != 0 {
		t.Fatalf("Preempt = %v, %s, %v; want no node kept", describeVictims(result.NodeNameToMetaVictims), outcome, err)
	}
	ev := strings.Join(f.events(), "\n")
	if !strings.Contains(ev, "used 10000, asked 12000, limit 12000, and no pod is evicted to make room in a quota") {
		t.Errorf("events = %s, want the quota's reason", ev)
	}
}

// TestQuotaLoweredAndDeleted reads the limits from ResourceQuotas as the
// scheduler does: a quota lowered below what the namespace holds evicts
// nothing and turns new pods away with the excess; once it is deleted,
// they fit again.
func TestQuotaLoweredAndDeleted(t *testing.T) {
	f := newFixture(t)
	informer := informers.NewSharedInformerFactory(f.kube, 0).Core().V1().ResourceQuotas()
	f.ext.Quotas = quota.NewLister(informer.Lister())
	f.place("held", "uid-held", "a100-1-gpu0", 30000, 0)
	lowered := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: "ns"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{quota.KeyMemory: resource.MustParse("20000")}},
	}
	if err := informer.Informer().GetIndexer().Add(lowered); err != nil {
		t.Fatal(err)
	}
	names := []string{"a100-2"}
	pod := podSpec("p", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=1000")
	result, _ := f.filter(&extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names})
	want := "namespace ns would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/memory (GPU memory in MiB): used 30000, asked 1000, limit 20000"
	if got := result.FailedAndUnresolvableNodes["a100-2"]; got != want {
		t.Errorf("under a lowered quota a100-2 says %q, want %q", got, want)
	}
	if _, ok := f.view.Pod("uid-held"); !ok {
		t.Error("the pod holding GPUs was released under the lowered quota, want it kept")
	}
	if err := informer.Informer().GetIndexer().Delete(lowered); err != nil {
		t.Fatal(err)
	}
	result, _ = f.filter(&extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names})
	if got := *result.NodeNames; len(got) != 1 {
		t.Errorf("with the quota deleted feasible = %v, want a100-2: %v", got, result.FailedAndUnresolvableNodes)
	}
}
