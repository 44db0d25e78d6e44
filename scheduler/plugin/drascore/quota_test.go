package drascore

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/quota"
)

// allocated is claim name of namespace ns, allocated one request's device
// on node with the consumed capacity given; it adds what it consumes to m.
func allocated(m *draManager, ns, name, node string, device int, memory, cores string) *resourceapi.ResourceClaim {
	id, c := used(node, device, memory, cores, "1")
	m.consumed[id] = c
	consumed := map[resourceapi.QualifiedName]resource.Quantity{}
	for k, q := range c {
		consumed[k] = *q
	}
	claim := claim(name)
	claim.Namespace = ns
	claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
		Request: "gpu", Driver: gpuv1alpha1.DRADriverName, Pool: node, Device: deviceName(device), ConsumedCapacity: consumed,
	}}}}
	return claim
}

// inFlight is claim name of namespace ns as allocated, but with its
// allocation still in flight, reserved and not yet written to its status.
func inFlight(m *draManager, ns, name, node string, device int, memory, cores string) *resourceapi.ResourceClaim {
	claim := allocated(m, ns, name, node, device, memory, cores)
	claim.UID = types.UID(ns + "/" + name)
	if m.pending == nil {
		m.pending = map[types.UID]*resourceapi.AllocationResult{}
	}
	m.pending[claim.UID], claim.Status.Allocation = claim.Status.Allocation, nil
	return claim
}

// activations records the pods the plugin activates.
type activations []string

func (a *activations) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	for key := range pods {
		*a = append(*a, key)
	}
}

// filter runs PreFilter for the pod and Filter on each node, as
// kube-scheduler does, and returns PreFilter's status, or each node's.
func filter(t *testing.T, p *Plugin, pod *v1.Pod, nodes ...string) (*fwk.Status, map[string]*fwk.Status) {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	if _, status := p.PreFilter(ctx, state, pod, nil); !status.IsSuccess() {
		return status, nil
	}
	out := map[string]*fwk.Status{}
	for _, n := range nodes {
		ni := framework.NewNodeInfo()
		ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
		out[n] = p.Filter(ctx, state, pod, ni)
	}
	return nil, out
}

// quotaCluster is four nodes: "a" with two 24 GiB GPUs, where namespace
// ns's claim "held" takes 10 GiB and 30% of gpu-0 and namespace other's
// claim "theirs" 20 GiB and half of gpu-1; "b" with one 24 GiB GPU that
// ns's claim "whole" has alone (all its memory, no cores named); "c" with
// an empty 16 GiB GPU and "d" with an empty 40 GiB one. Namespace ns uses
// 34816 MiB, 130 cores and 2 GPUs.
func quotaCluster() *draManager {
	const class = gpuv1alpha1.DRADriverName
	m := &draManager{
		slices:   []*resourceapi.ResourceSlice{slice("a", 1, 24, 24), slice("b", 1, 24), slice("c", 1, 16), slice("d", 1, 40)},
		consumed: structured.ConsumedCapacityCollection{},
	}
	m.claims = claims{
		"held":   allocated(m, "ns", "held", "a", 0, "10Gi", "30"),
		"theirs": allocated(m, "other", "theirs", "a", 1, "20Gi", "50"),
		"whole":  allocated(m, "ns", "whole", "b", 0, "24Gi", "0"),
		"8gi":    claim("8gi", exactly("gpu", class, 1, "memory", "8Gi", "cores", "10")),
		"1gi":    claim("1gi", exactly("gpu", class, 1, "memory", "1Gi", "cores", "20")),
		"any":    claim("any", exactly("gpu", class, 1)),
		"4gi":    claim("4gi", exactly("gpu", class, 1, "memory", "4Gi")),
		"nic":    claim("nic", exactly("nic", "nic.example.com", 1)),
	}
	return m
}

func TestQuotaHoldsForClaims(t *testing.T) {
	limits := func(memoryMiB, cores, gpus int64) quota.Limits {
		var l quota.Limits
		for _, x := range []struct {
			limit *quota.Limit
			hard  int64
		}{{&l.MemoryMiB, memoryMiB}, {&l.Cores, cores}, {&l.GPUs, gpus}} {
			if x.hard >= 0 {
				*x.limit = quota.Limit{Hard: x.hard, Set: true, Quota: "gpu"}
			}
		}
		return l
	}
	tests := []struct {
		name   string
		limits quota.Limits
		claim  string
		// reserved adds claim "reserved" of ns, its one GPU on "c" in
		// flight for a pod placed just before.
		reserved bool
		// refused is PreFilter's message; else turnedAway names the
		// nodes Filter turns away, with the message.
		refused    string
		turnedAway map[string]string
	}{
		{name: "room beside the namespace's claims", limits: limits(40000, 200, 4), claim: "1gi"},
		{name: "memory of the namespace's claims and the pod's over the limit", limits: limits(40000, -1, -1), claim: "8gi",
			refused: "namespace ns would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/memory (GPU memory in MiB): used 34816, asked 8192, limit 40000"},
		{name: "a GPU a claim has alone counts all its compute", limits: limits(-1, 140, -1), claim: "1gi",
			refused: "namespace ns would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/cores (GPU compute in percent of one GPU): used 130, asked 20, limit 140"},
		{name: "each allocated device is one GPU", limits: limits(-1, -1, 2), claim: "1gi",
			refused: "namespace ns would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/gpus (GPUs): used 2, asked 1, limit 2"},
		{name: "a claim being allocated counts", limits: limits(-1, -1, 3), claim: "1gi", reserved: true,
			refused: "namespace ns would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/gpus (GPUs): used 3, asked 1, limit 3"},
		{name: "a claim being allocated for another pod asks nothing more", limits: limits(-1, -1, 3), claim: "reserved", reserved: true},
		{name: "other namespaces' claims do not count", limits: limits(-1, 230, 3), claim: "8gi"},
		{name: "a whole GPU takes the memory of the GPU it gets, node by node", limits: limits(34816+20000, -1, -1), claim: "any",
			turnedAway: map[string]string{"d": "namespace ns would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/memory (GPU memory in MiB): used 34816, asked 40960, limit 54816"}},
		{name: "a slice without compute where compute is limited", limits: limits(-1, 1000, -1), claim: "4gi",
			refused: "namespace ns limits GPU compute (ResourceQuota gpu on requests.gpu.tessera.dev/cores): must specify capacity.requests.cores for: 4gi/gpu"},
		{name: "a whole GPU states its compute", limits: limits(-1, 1000, -1), claim: "any"},
		{name: "no quota, no check", limits: quota.Limits{}, claim: "8gi"},
		{name: "claims of other classes are not counted", limits: limits(0, 0, 0), claim: "nic"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defaults, err := decodeArgs(nil)
			if err != nil {
				t.Fatal(err)
			}
			var activated activations
			m := quotaCluster()
			if tc.reserved {
				m.claims["reserved"] = inFlight(m, "ns", "reserved", "c", 0, "4Gi", "10")
			}
			p := newPlugin(defaults, m, quota.Fixed{"ns": tc.limits}, &activated)
			pod := podOf(tc.claim)
			status, nodes := filter(t, p, pod, "a", "b", "c", "d")
			if tc.refused != "" {
				if status.Code() != fwk.UnschedulableAndUnresolvable || status.Message() != tc.refused {
					t.Fatalf("PreFilter = %v, want unresolvable: %s", status, tc.refused)
				}
				return
			}
			if status != nil && !status.IsSkip() {
				t.Fatalf("PreFilter = %v, want the pod let through", status)
			}
			for node, got := range nodes {
				want, turned := tc.turnedAway[node]
				switch {
				case turned && (got.Code() != fwk.UnschedulableAndUnresolvable || got.Message() != want):
					t.Errorf("Filter on %s = %v, want unresolvable: %s", node, got, want)
				case !turned && !got.IsSuccess():
					t.Errorf("Filter on %s = %v, want it passed", node, got)
				}
			}
		})
	}
}

func TestQuotaRequeue(t *testing.T) {
	defaults, err := decodeArgs(nil)
	if err != nil {
		t.Fatal(err)
	}
	gpus := quota.Fixed{"ns": {GPUs: quota.Limit{Hard: 2, Set: true, Quota: "gpu"}}}
	rq := func(ns string, hard v1.ResourceName) *v1.ResourceQuota {
		return &v1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "q"},
			Spec:       v1.ResourceQuotaSpec{Hard: v1.ResourceList{hard: resource.MustParse("4")}},
		}
	}
	turnedAway := func(p *Plugin, name string) *v1.Pod {
		pod := podOf("1gi")
		pod.Name, pod.UID = name, types.UID(name)
		if status, _ := filter(t, p, pod); status.Code() != fwk.UnschedulableAndUnresolvable {
			t.Fatalf("PreFilter = %v, want the pod turned away", status)
		}
		return pod
	}
	t.Run("a GPU quota of the namespace changed activates its pods", func(t *testing.T) {
		var activated activations
		p := newPlugin(defaults, quotaCluster(), gpus, &activated)
		turnedAway(p, "p1")
		gone := turnedAway(p, "p2")
		p.podGone(cache.DeletedFinalStateUnknown{Key: "ns/p2", Obj: gone})
		h := p.quotaHandler(context.Background())
		h.OnUpdate(rq("other", "requests.cpu"), rq("other", quota.KeyGPUs))
		h.OnUpdate(rq("ns", "requests.cpu"), rq("ns", "requests.memory"))
		if len(activated) != 0 {
			t.Fatalf("activated %v for quotas of other namespaces or resources, want none", activated)
		}
		used := rq("ns", quota.KeyGPUs)
		used.Status.Used = v1.ResourceList{quota.KeyGPUs: resource.MustParse("2")}
		h.OnAdd(rq("ns", quota.KeyGPUs), false)
		h.OnUpdate(rq("ns", quota.KeyGPUs), used)
		if len(activated) != 0 {
			t.Fatalf("activated %v for a quota created or its status written, want none", activated)
		}
		h.OnUpdate(rq("ns", "requests.cpu"), rq("ns", quota.KeyGPUs))
		if len(activated) != 1 || activated[0] != "ns/p1" {
			t.Errorf("activated %v, want ns/p1 (p2 is gone)", activated)
		}
	})
	t.Run("a pod whose quota changed while it was read is activated at once", func(t *testing.T) {
		var activated activations
		p := newPlugin(defaults, quotaCluster(), nil, &activated)
		p.quotas = changing{Fixed: gpus, changed: func() { p.waiting.quotaChanged("ns") }}
		turnedAway(p, "p1")
		if len(activated) != 1 || activated[0] != "ns/p1" {
			t.Errorf("activated %v, want ns/p1", activated)
		}
	})
}

// changing is a quota Source whose namespaces' quotas change as they are read.
type changing struct {
	quota.Fixed
	changed func()
}

func (c changing) Limits(namespace string) quota.Limits {
	defer c.changed()
	return c.Fixed.Limits(namespace)
}

func TestClaimFreed(t *testing.T) {
	m := &draManager{consumed: structured.ConsumedCapacityCollection{}}
	held := allocated(m, "ns", "held", "a", 0, "1Gi", "10")
	freed := held.DeepCopy()
	freed.Status.Allocation = nil
	theirs := allocated(m, "other", "theirs", "a", 0, "1Gi", "10")
	theirsFreed := theirs.DeepCopy()
	theirsFreed.Status.Allocation = nil
	nic := held.DeepCopy()
	nic.Status.Allocation.Devices.Results[0].Driver = "nic.example.com"
	tests := []struct {
		name           string
		oldObj, newObj any
		want           fwk.QueueingHint
	}{
		{"a claim of the namespace deallocated", held, freed, fwk.Queue},
		{"an allocated claim of the namespace deleted", held, nil, fwk.Queue},
		{"a claim of the namespace deleted, its last state unknown", cache.DeletedFinalStateUnknown{Key: "ns/held", Obj: held}, nil, fwk.Queue},
		{"a claim of another namespace deallocated", theirs, theirsFreed, fwk.QueueSkip},
		{"a claim of another namespace deleted, its last state unknown", cache.DeletedFinalStateUnknown{Key: "other/theirs", Obj: theirs}, nil, fwk.QueueSkip},
		{"a claim still allocated", held, held, fwk.QueueSkip},
		{"a claim that held no GPU freed", nic, freed, fwk.QueueSkip},
		{"a claim never allocated deleted", freed, nil, fwk.QueueSkip},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := claimFreed(klog.Background(), podOf("1gi"), tc.oldObj, tc.newObj)
			if err != nil || got != tc.want {
				t.Errorf("claimFreed = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
