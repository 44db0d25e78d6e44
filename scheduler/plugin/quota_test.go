package plugin

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/quota"
)

// memoryQuota gives the plugin, and its requeuer, which share its rules'
// quotas, a GPU memory limit of mib for namespace default.
func memoryQuota(p *Plugin, mib int64) {
	p.rules.Quotas.(quota.Fixed)["default"] = quota.Limits{MemoryMiB: quota.Limit{Hard: mib, Set: true, Quota: "gpu"}}
}

// percentPod is a pod asking for pct percent of one GPU's memory.
func percentPod(name string, pct int64) *v1.Pod {
	pod := gpuPod(name, 1)
	names := gpurequest.DefaultResourceNames()
	limits := pod.Spec.Containers[0].Resources.Limits
	delete(limits, names.Memory)
	limits[names.MemoryPercentage] = *resource.NewQuantity(pct, resource.DecimalSI)
	return pod
}

// wantActivated fails the test unless the pods activated so far are want.
func wantActivated(t *testing.T, act *activations, when string, want ...string) {
	t.Helper()
	if !slices.Equal(act.pods, want) {
		t.Errorf("%s: activated %v, want %v", when, act.pods, want)
	}
}

// TestFilterQuota checks that the node turns a pod away, unresolvably,
// when what it would get there does not fit its namespace's quota, and
// that PostFilter then says no pod is evicted for a quota and leaves the
// pod to the requeuer, which activates it once the namespace frees room.
func TestFilterQuota(t *testing.T) {
	p, v, act := newTestPlugin(t)
	memoryQuota(p, 15000)
	held := gpuPod("held", 10240)
	place(v, held, "GPU-0", 10240)
	ctx := context.Background()

	pod := percentPod("half", 50)
	state := preFilter(t, p, pod)
	st := p.Filter(ctx, state, pod, nodeInfo(held))
	wantCode(t, "Filter", st, fwk.UnschedulableAndUnresolvable)
	if want := "namespace default would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/memory (GPU memory in MiB): used 10240, asked 7680, limit 15000"; st.Message() != want {
		t.Errorf("Filter says %q, want %q", st.Message(), want)
	}
	statuses := framework.NewDefaultNodeToStatus()
	statuses.Set(node, st.WithPlugin(Name))
	p.handle = snapshotHandle{snapshot: cache.NewSnapshot(nil, []*v1.Node{nodeInfo().Node()})}
	_, got := p.PostFilter(ctx, state, pod, statuses)
	if want := "GPU preemption: none; 1 node(s) would take the pod's GPUs but its namespace's GPU quota has no room for them there, and " + noQuotaEviction; got.Message() != want {
		t.Errorf("PostFilter says %q, want %q", got.Message(), want)
	}

	// GPUs freed on the node by another namespace do not activate it.
	p.requeue.Freed(node)
	wantActivated(t, act, "GPUs freed while the quota has no room")
	v.Release(held.UID)
	p.requeue.QuotaFreed("default")
	wantActivated(t, act, "the namespace freed room", "default/half")
}

// TestPreFilterQuotaClosed checks that a pod the quota has no room for,
// whatever GPUs it gets, is turned away before Filter runs.
func TestPreFilterQuotaClosed(t *testing.T) {
	p, v, _ := newTestPlugin(t)
	memoryQuota(p, 12000)
	place(v, gpuPod("held", 10240), "GPU-0", 10240)
	pod := gpuPod("big", 2000)
	state := framework.NewCycleState()
	_, st := p.PreFilter(context.Background(), state, pod, nil)
	wantCode(t, "PreFilter", st, fwk.UnschedulableAndUnresolvable)
	if want := "namespace default would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/memory (GPU memory in MiB): used 10240, asked 2000, limit 12000"; st.Message() != want {
		t.Errorf("PreFilter says %q, want %q", st.Message(), want)
	}
	_, got := p.PostFilter(context.Background(), state, pod, framework.NewDefaultNodeToStatus())
	if want := "GPU preemption: none, " + noQuotaEviction; got.Message() != want {
		t.Errorf("PostFilter says %q, want %q", got.Message(), want)
	}
}

// TestReserveQuota checks that two pods of a namespace that each passed
// Filter cannot both be reserved when the quota has room for one: the
// second is refused, holds nothing, and waits on the quota.
func TestReserveQuota(t *testing.T) {
	p, v, act := newTestPlugin(t)
	memoryQuota(p, 12000)
	ctx := context.Background()
	first, second := gpuPod("first", 8000), gpuPod("second", 8000)
	s1, s2 := preFilter(t, p, first), preFilter(t, p, second)
	wantCode(t, "Filter second", p.Filter(ctx, s2, second, nodeInfo()), fwk.Success)
	wantCode(t, "Reserve first", p.Reserve(ctx, s1, first, node), fwk.Success)
	st := p.Reserve(ctx, s2, second, node)
	wantCode(t, "Reserve second", st, fwk.UnschedulableAndUnresolvable)
	if want := "namespace default would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/memory (GPU memory in MiB): used 8000, asked 8000, limit 12000"; st.Message() != want {
		t.Errorf("Reserve says %q, want %q", st.Message(), want)
	}
	if _, ok := v.Pod(second.UID); ok || v.Used("default").MemoryMiB != 8000 {
		t.Errorf("after the refusal the view holds %+v, want the first pod's 8000 MiB only", v.Used("default"))
	}
	p.Unreserve(ctx, s1, first, node)
	wantActivated(t, act, "the first gave its room back", "default/second")
}

// TestQuotaLowered checks that a quota lowered below what the namespace
// holds evicts nothing and lets no new pod in, and that a pod waiting on it
// is activated when the quota is raised, and only then.
func TestQuotaLowered(t *testing.T) {
	p, v, act := newTestPlugin(t)
	held := gpuPod("held", 10240)
	place(v, held, "GPU-0", 10240)
	memoryQuota(p, 5000)
	pod := gpuPod("new", 1000)
	state := framework.NewCycleState()
	_, st := p.PreFilter(context.Background(), state, pod, nil)
	wantCode(t, "PreFilter", st, fwk.UnschedulableAndUnresolvable)
	// PreFilter alone tells the requeuer, whether PostFilter runs or not.
	if _, ok := v.Pod(held.UID); !ok {
		t.Error("the pod holding GPUs was released, want it kept")
	}
	p.requeue.QuotaFreed("default")
	wantActivated(t, act, "the quota still below use")
	memoryQuota(p, 20000)
	p.requeue.QuotaFreed("default")
	wantActivated(t, act, "the quota raised", "default/new")
}

// TestPlayQuota checks that GPUs freed on a node activate, of the pods
// waiting for them, only those their namespace's quota has room for.
func TestPlayQuota(t *testing.T) {
	p, v, act := newTestPlugin(t)
	memoryQuota(p, 12000)
	ctx := context.Background()
	other0, other1 := gpuPod("other-0", 15360), gpuPod("other-1", 10240)
	other0.Namespace, other1.Namespace = "other", "other"
	place(v, other0, "GPU-0", 15360)
	place(v, other1, "GPU-1", 10240)
	held := gpuPod("held", 5120)
	place(v, held, "GPU-1", 5120)
	for _, name := range []string{"w1", "w2"} {
		pod := percentPod(name, 50)
		state := preFilter(t, p, pod)
		// Unresolvable: the pods on the node have no lower priority.
		wantCode(t, "Filter "+name, p.Filter(ctx, state, pod, nodeInfo(other0, other1, held)), fwk.UnschedulableAndUnresolvable)
	}
	v.Release(other0.UID)
	p.requeue.Freed(node)
	wantActivated(t, act, "half a GPU, 7680 MiB, and 6880 MiB left of the quota")
	v.Release(held.UID)
	p.requeue.Freed(node)
	wantActivated(t, act, "the GPUs have room for both, the quota for one", "default/w1")
}

// TestQuotaWaiterRefusedOtherwise checks that a pod the quota turned away
// once, whose later cycle failed for another reason, no longer waits on
// the quota: it would take the room a quota raised gives before the pods
// really waiting on it.
func TestQuotaWaiterRefusedOtherwise(t *testing.T) {
	p, v, act := newTestPlugin(t)
	memoryQuota(p, 12000)
	place(v, gpuPod("held", 10240), "GPU-0", 10240)
	first, second := gpuPod("first", 2000), gpuPod("second", 2000)
	second.CreationTimestamp.Time = first.CreationTimestamp.Add(time.Second)
	for _, pod := range []*v1.Pod{first, second} {
		_, st := p.PreFilter(context.Background(), framework.NewCycleState(), pod, nil)
		wantCode(t, "PreFilter "+pod.Name, st, fwk.UnschedulableAndUnresolvable)
	}
	// The first's next cycle fails on no quota.
	req, err := p.parser.Parse(first)
	if err != nil {
		t.Fatal(err)
	}
	p.requeue.Waiting(first, req.Request)
	p.requeue.Failed(first.UID)
	memoryQuota(p, 14000)
	p.requeue.QuotaFreed("default")
	wantActivated(t, act, "the quota raised by one pod's room", "default/second")
}

// TestQuotaCoresUnstated checks that, in a namespace whose quota limits GPU
// compute, a pod with a slice that states no compute is turned away before
// Filter, whatever room the quota has, naming the container and the
// resource to state, and is not left waiting on the quota; a slice that
// states it and a whole GPU pass.
func TestQuotaCoresUnstated(t *testing.T) {
	names := gpurequest.DefaultResourceNames()
	tests := []struct {
		name string
		pod  func() *v1.Pod
		want string
	}{
		{name: "a slice without compute", pod: func() *v1.Pod { return gpuPod("slice", 1000) },
			want: "namespace default limits GPU compute (ResourceQuota gpu on requests.gpu.tessera.dev/cores): must specify nvidia.com/gpucores for: main"},
		{name: "a memory percentage without compute", pod: func() *v1.Pod { return percentPod("percent", 50) },
			want: "namespace default limits GPU compute (ResourceQuota gpu on requests.gpu.tessera.dev/cores): must specify nvidia.com/gpucores for: main"},
		{name: "a slice with compute", pod: func() *v1.Pod {
			pod := gpuPod("stated", 1000)
			pod.Spec.Containers[0].Resources.Limits[names.Cores] = resource.MustParse("20")
			return pod
		}},
		{name: "a whole GPU", pod: func() *v1.Pod {
			pod := gpuPod("whole", 1000)
			delete(pod.Spec.Containers[0].Resources.Limits, names.Memory)
			return pod
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _, act := newTestPlugin(t)
			p.rules.Quotas.(quota.Fixed)["default"] = quota.Limits{Cores: quota.Limit{Hard: 1000, Set: true, Quota: "gpu"}}
			pod := tc.pod()
			state := framework.NewCycleState()
			_, st := p.PreFilter(context.Background(), state, pod, nil)
			if tc.want == "" {
				wantCode(t, "PreFilter", st, fwk.Success)
				return
			}
			wantCode(t, "PreFilter", st, fwk.UnschedulableAndUnresolvable)
			if st.Message() != tc.want {
				t.Errorf("PreFilter says %q, want %q", st.Message(), tc.want)
			}
			p.handle = snapshotHandle{snapshot: cache.NewSnapshot(nil, []*v1.Node{nodeInfo().Node()})}
			statuses := framework.NewDefaultNodeToStatus()
			statuses.Set(node, st.WithPlugin(Name))
			if _, post := p.PostFilter(context.Background(), state, pod, statuses); post.Message() != "GPU preemption: none, "+tc.want {
				t.Errorf("PostFilter says %q, want the reason again", post.Message())
			}
			p.requeue.QuotaFreed("default")
			wantActivated(t, act, "the namespace freed room")
		})
	}
}
