package view

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

var now = time.Unix(1_700_000_000, 0)

func gpuNode(name string, gpus int, cordoned ...string) *gpuv1alpha1.GPUNode {
	gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	gn.Spec.CordonedDevices = cordoned
	for i := range gpus {
		gn.Status.Devices = append(gn.Status.Devices, gpuv1alpha1.GPUDevice{
			UUID: fmt.Sprintf("%s-gpu%d", name, i), Index: int32(i), Model: "A100",
			MemoryMiB: 80000, Cores: 100, ShareLimit: 10, Health: gpuv1alpha1.GPUHealthy,
		})
	}
	return gn
}

// containers gives one app container memoryMiB and cores on each listed GPU.
func containers(memoryMiB int64, cores int32, uuids ...string) []gpuv1alpha1.ContainerAllocation {
	c := gpuv1alpha1.ContainerAllocation{Name: "main", Kind: gpuv1alpha1.ContainerApp}
	for _, u := range uuids {
		c.Devices = append(c.Devices, gpuv1alpha1.DeviceAllocation{UUID: u, MemoryMiB: memoryMiB, Cores: cores})
	}
	return []gpuv1alpha1.ContainerAllocation{c}
}

func allocation(name string, uid, podUID types.UID, node string, c []gpuv1alpha1.ContainerAllocation) *gpuv1alpha1.GPUAllocation {
	return &gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid},
		Spec:       gpuv1alpha1.GPUAllocationSpec{PodUID: podUID, NodeName: node, Containers: c},
	}
}

// written is the allocation as the bind of the pod's reservation in the
// view writes it, carrying the reservation's token.
func written(v *View, a *gpuv1alpha1.GPUAllocation) *gpuv1alpha1.GPUAllocation {
	p, ok := v.Pod(a.Spec.PodUID)
	if !ok || !p.Reserved {
		panic("written: the pod holds no reservation")
	}
	a.Annotations = map[string]string{gpuv1alpha1.BindAnnotation: p.bind}
	return a
}

// fitOn returns a FitFunc that places the given containers, or fails.
func fitOn(c []gpuv1alpha1.ContainerAllocation, err error) FitFunc {
	return func(*Node) ([]gpuv1alpha1.ContainerAllocation, error) { return c, err }
}

// usage is one GPU's used memory, cores and shares.
type usage struct {
	memory       int64
	cores, share int32
}

func usageOf(t *testing.T, v *View, node string, gpu int) usage {
	t.Helper()
	var u usage
	found := false
	v.Read([]string{node}, "", func(_ string, n *Node) {
		if n == nil || gpu >= len(n.Placement.Devices) {
			return
		}
		d := n.Placement.Devices[gpu]
		u, found = usage{d.UsedMemoryMiB, d.UsedCores, d.UsedShares}, true
	})
	if !found {
		t.Fatalf("node %s GPU %d not in the view", node, gpu)
	}
	return u
}

func TestView(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, v *View)
		want usage // on n1-gpu0 at the end
	}{
		{
			name: "allocation applies its holds",
			run: func(t *testing.T, v *View) {
				v.Place(allocation("p", "a1", "p1", "n1", containers(1000, 10, "n1-gpu0")))
			},
			want: usage{1000, 10, 1},
		},
		{
			name: "an allocation delivered twice counts once",
			run: func(t *testing.T, v *View) {
				a := allocation("p", "a1", "p1", "n1", containers(1000, 10, "n1-gpu0"))
				v.Place(a)
				a.Status.Phase = gpuv1alpha1.AllocationAllocated
				v.Place(a)
			},
			want: usage{1000, 10, 1},
		},
		{
			name: "the allocation replaces the reservation of its bind",
			run: func(t *testing.T, v *View) {
				c := containers(1000, 10, "n1-gpu0")
				if _, _, err := v.Reserve("p1", "ns", "p", "n1", now, fitOn(c, nil)); err != nil {
					t.Fatal(err)
				}
				v.Place(written(v, allocation("p", "a1", "p1", "n1", c)))
				if p, _ := v.Pod("p1"); p.Reserved || p.AllocationUID != "a1" {
					t.Errorf("the pod holds %+v, want its allocation", p)
				}
			},
			want: usage{1000, 10, 1},
		},
		{
			name: "an earlier bind's allocation seen late leaves the new reservation counted",
			run: func(t *testing.T, v *View) {
				// The first bind, on n2, wrote its allocation; the
				// binding's answer was lost, and the pod was reserved
				// again on n1 before the allocation was seen.
				v.Reserve("p1", "ns", "p", "n2", now, fitOn(containers(1000, 10, "n2-gpu0"), nil))
				first := written(v, allocation("p", "a-first", "p1", "n2", containers(1000, 10, "n2-gpu0")))
				v.Reserve("p1", "ns", "p", "n1", now.Add(time.Second), fitOn(containers(1000, 10, "n1-gpu0"), nil))
				v.Place(first)
				if u := usageOf(t, v, "n2", 0); u != (usage{}) {
					t.Errorf("n2 usage = %+v, want none: the new bind replaces the allocation", u)
				}
			},
			want: usage{1000, 10, 1},
		},
		{
			name: "a reservation given back brings back the allocation it was to replace",
			run: func(t *testing.T, v *View) {
				v.Place(allocation("p", "a-old", "p1", "n1", containers(5000, 50, "n1-gpu0")))
				v.Reserve("p1", "ns", "p", "n2", now, fitOn(containers(1000, 10, "n2-gpu0"), nil))
				if !v.ReleaseReservation("p1", now) {
					t.Fatal("the reservation was not released")
				}
				if u := usageOf(t, v, "n2", 0); u != (usage{}) {
					t.Errorf("n2 usage = %+v, want none", u)
				}
			},
			want: usage{5000, 50, 1},
		},
		{
			name: "a reservation given back brings back the kept reservation it replaced",
			run: func(t *testing.T, v *View) {
				// The first bind's binding lost its answer, and may have
				// bound the pod: its reservation was kept. The pod was
				// reserved again on n2, and that bind failed (the pod was
				// bound after all) before the allocation was seen.
				v.Reserve("p1", "ns", "p", "n1", now, fitOn(containers(5000, 50, "n1-gpu0"), nil))
				v.Reserve("p1", "ns", "p", "n2", now.Add(time.Second), fitOn(containers(1000, 10, "n2-gpu0"), nil))
				if !v.ReleaseReservation("p1", now.Add(time.Second)) {
					t.Fatal("the reservation was not released")
				}
				if u := usageOf(t, v, "n2", 0); u != (usage{}) {
					t.Errorf("n2 usage = %+v, want none", u)
				}
				// The first bind's allocation, seen now, takes its place.
				first := written(v, allocation("p", "a-first", "p1", "n1", containers(5000, 50, "n1-gpu0")))
				v.Place(first)
				if p, _ := v.Pod("p1"); p.Reserved || p.AllocationUID != "a-first" {
					t.Errorf("the pod holds %+v, want the first bind's allocation", p)
				}
			},
			want: usage{5000, 50, 1},
		},
		{
			name: "a kept reservation whose allocation failed is not given back",
			run: func(t *testing.T, v *View) {
				v.Reserve("p1", "ns", "p", "n1", now, fitOn(containers(5000, 50, "n1-gpu0"), nil))
				first := written(v, allocation("p", "a-first", "p1", "n1", containers(5000, 50, "n1-gpu0")))
				v.Reserve("p1", "ns", "p", "n2", now.Add(time.Second), fitOn(containers(1000, 10, "n2-gpu0"), nil))
				// First seen Failed: the device plugin gave it nothing.
				v.ReleaseAllocation(first)
				if !v.ReleaseReservation("p1", now.Add(time.Second)) {
					t.Fatal("the reservation was not released")
				}
			},
		},
		{
			name: "an allocation seen late and deleted is not given back",
			run: func(t *testing.T, v *View) {
				v.Reserve("p1", "ns", "p", "n1", now, fitOn(containers(5000, 50, "n1-gpu0"), nil))
				first := written(v, allocation("p", "a-first", "p1", "n1", containers(5000, 50, "n1-gpu0")))
				v.Reserve("p1", "ns", "p", "n2", now.Add(time.Second), fitOn(containers(1000, 10, "n2-gpu0"), nil))
				v.Place(first)
				v.ReleaseAllocation(first) // the new bind replaced it
				if !v.ReleaseReservation("p1", now.Add(time.Second)) {
					t.Fatal("the reservation was not released")
				}
			},
		},
		{
			name: "release frees the pod",
			run: func(t *testing.T, v *View) {
				v.Place(allocation("p", "a1", "p1", "n1", containers(1000, 10, "n1-gpu0")))
				if _, ok := v.Release("p1"); !ok {
					t.Error("Release found nothing")
				}
			},
		},
		{
			name: "releasing an allocation frees it",
			run: func(t *testing.T, v *View) {
				a := allocation("p", "a1", "p1", "n1", containers(1000, 10, "n1-gpu0"))
				v.Place(a)
				v.ReleaseAllocation(a)
			},
		},
		{
			name: "releasing an allocation frees the reservation that created it",
			run: func(t *testing.T, v *View) {
				c := containers(1000, 10, "n1-gpu0")
				v.Reserve("p1", "ns", "p", "n1", now, fitOn(c, nil))
				v.ReleaseAllocation(written(v, allocation("p", "a1", "p1", "n1", c)))
			},
		},
		{
			name: "a replaced allocation's events leave the new reservation alone",
			run: func(t *testing.T, v *View) {
				stale := allocation("p", "a-old", "p1", "n1", containers(5000, 50, "n1-gpu0"))
				v.Place(stale)
				_, replaced, err := v.Reserve("p1", "ns", "p", "n1", now, fitOn(containers(1000, 10, "n1-gpu0"), nil))
				if err != nil || replaced == nil || replaced.AllocationUID != "a-old" {
					t.Fatalf("Reserve replaced %+v, err %v; want the stale allocation", replaced, err)
				}
				v.Place(stale)             // a late update of the stale allocation
				v.ReleaseAllocation(stale) // and its deletion
			},
			want: usage{1000, 10, 1},
		},
		{
			name: "a failed fit leaves the view as it was",
			run: func(t *testing.T, v *View) {
				v.Place(allocation("p", "a1", "p1", "n1", containers(1000, 10, "n1-gpu0")))
				if _, _, err := v.Reserve("p1", "ns", "p", "n1", now, fitOn(nil, errors.New("no"))); err == nil {
					t.Fatal("Reserve succeeded")
				}
			},
			want: usage{1000, 10, 1},
		},
		{
			name: "the fit does not see the pod's own earlier hold",
			run: func(t *testing.T, v *View) {
				v.Place(allocation("p", "a1", "p1", "n1", containers(70000, 10, "n1-gpu0")))
				var seen int64 = -1
				v.Reserve("p1", "ns", "p", "n1", now, func(n *Node) ([]gpuv1alpha1.ContainerAllocation, error) {
					seen = n.Placement.Devices[0].UsedMemoryMiB
					return containers(2000, 10, "n1-gpu0"), nil
				})
				if seen != 0 {
					t.Errorf("fit saw %d MiB used, want 0", seen)
				}
			},
			want: usage{2000, 10, 1},
		},
		{
			name: "a reservation on another node moves the pod",
			run: func(t *testing.T, v *View) {
				v.Place(allocation("p", "a1", "p1", "n1", containers(1000, 10, "n1-gpu0")))
				v.Reserve("p1", "ns", "p", "n2", now, fitOn(containers(1000, 10, "n2-gpu0"), nil))
				if u := usageOf(t, v, "n2", 0); u != (usage{1000, 10, 1}) {
					t.Errorf("n2 usage = %+v", u)
				}
			},
		},
		{
			name: "a dropped reservation is freed only if it is still the pod's hold",
			run: func(t *testing.T, v *View) {
				c := containers(1000, 10, "n1-gpu0")
				v.Reserve("p1", "ns", "p", "n1", now, fitOn(c, nil))
				if v.ReleaseReservation("p1", now.Add(time.Second)) {
					t.Error("released a reservation made at another time")
				}
				v.Place(written(v, allocation("p", "a1", "p1", "n1", c)))
				if v.ReleaseReservation("p1", now) {
					t.Error("released a hold that is an allocation now")
				}
			},
			want: usage{1000, 10, 1},
		},
		{
			name: "read without a pod leaves out its usage",
			run: func(t *testing.T, v *View) {
				v.Place(allocation("p", "a1", "p1", "n1", containers(1000, 10, "n1-gpu0")))
				v.Read([]string{"n1"}, "p1", func(_ string, n *Node) {
					if u := n.Placement.Devices[0].UsedMemoryMiB; u != 0 {
						t.Errorf("read without p1 sees %d MiB", u)
					}
				})
			},
			want: usage{1000, 10, 1},
		},
		{
			name: "GPUNode update keeps the usage",
			run: func(t *testing.T, v *View) {
				v.Place(allocation("p", "a1", "p1", "n1", containers(1000, 10, "n1-gpu0")))
				v.SetGPUNode(gpuNode("n1", 2, "n1-gpu1"))
			},
			want: usage{1000, 10, 1},
		},
		{
			name: "GPUNode deleted and back re-applies the holds",
			run: func(t *testing.T, v *View) {
				v.Place(allocation("p", "a1", "p1", "n1", containers(1000, 10, "n1-gpu0")))
				v.DeleteGPUNode("n1")
				v.Read([]string{"n1"}, "", func(_ string, n *Node) {
					if n == nil || n.HasGPUNode || len(n.Placement.Devices) != 0 {
						t.Errorf("deleted node still offers GPUs: %+v", n)
					}
				})
				v.SetGPUNode(gpuNode("n1", 2))
			},
			want: usage{1000, 10, 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := New()
			v.SetGPUNode(gpuNode("n1", 2))
			v.SetGPUNode(gpuNode("n2", 2))
			tc.run(t, v)
			if got := usageOf(t, v, "n1", 0); got != tc.want {
				t.Errorf("n1-gpu0 usage = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSetGPUNode(t *testing.T) {
	v := New()
	gn := gpuNode("n1", 3, "n1-gpu2")
	gn.Status.Devices[1].Health = gpuv1alpha1.GPUUnhealthy
	gn.Status.Conditions = []metav1.Condition{{Type: gpuv1alpha1.GPUNodeReady, Status: metav1.ConditionFalse, Reason: "KubeletGone", Message: "kubelet socket is gone"}}
	v.SetLease("n1", now)
	v.SetGPUNode(gn)
	v.Read([]string{"n1", "absent"}, "", func(name string, n *Node) {
		if name == "absent" {
			if n != nil {
				t.Errorf("unknown node read as %+v", n)
			}
			return
		}
		d := n.Placement.Devices
		switch {
		case !n.HasGPUNode:
			t.Error("HasGPUNode = false")
		case !n.Renewed().Equal(now):
			t.Errorf("Lease renewed %v, want %v", n.Renewed(), now)
		case n.NotReady != "kubelet socket is gone":
			t.Errorf("NotReady = %q", n.NotReady)
		case len(d) != 3 || !d[0].Healthy || d[1].Healthy || d[0].Cordoned || !d[2].Cordoned:
			t.Errorf("devices = %+v", d)
		}
	})
}

func TestDeletedNodeWithoutPodsIsForgotten(t *testing.T) {
	v := New()
	v.SetGPUNode(gpuNode("n1", 1))
	v.DeleteGPUNode("n1")
	v.mu.RLock()
	defer v.mu.RUnlock()
	if len(v.nodes) != 0 {
		t.Errorf("view keeps %d nodes", len(v.nodes))
	}
}

// TestForgottenNodeLeavesNothing forgets a node that had a not-ready
// GPUNode with a cordoned GPU, then makes other nodes, one of which takes
// its place in memory: none may show anything of it.
func TestForgottenNodeLeavesNothing(t *testing.T) {
	v := New()
	gn := gpuNode("old", 2, "old-gpu1")
	gn.Status.Conditions = []metav1.Condition{{Type: gpuv1alpha1.GPUNodeReady, Status: metav1.ConditionFalse, Reason: "Gone"}}
	v.SetGPUNode(gn)
	v.Place(allocation("p", "a-p", "p", "old", containers(1000, 10, "old-gpu0")))
	v.DeleteGPUNode("old")
	v.Release("p")
	v.Place(allocation("q", "a-q", "q", "pods-only", containers(1000, 10, "pods-only-gpu0")))
	v.SetGPUNode(gpuNode("fresh", 1))
	v.Read([]string{"old", "pods-only", "fresh"}, "", func(name string, n *Node) {
		switch name {
		case "old":
			if n != nil {
				t.Errorf("forgotten node old is still there: %+v", n)
			}
		case "pods-only":
			if n == nil || n.HasGPUNode || len(n.Placement.Devices) != 0 || n.NotReady != "" || !n.Renewed().IsZero() || n.Pods() != 1 {
				t.Errorf("node pods-only = %+v, want only its pod", n)
			}
		case "fresh":
			want := []placement.Device{{UUID: "fresh-gpu0", Model: "A100", MemoryMiB: 80000, Cores: 100, ShareLimit: 10, Healthy: true}}
			if n == nil || !n.HasGPUNode || n.NotReady != "" || n.Pods() != 0 || !reflect.DeepEqual(n.Placement.Devices, want) {
				t.Errorf("node fresh = %+v, want its one idle GPU", n)
			}
		}
	})
}

// TestLeases follows a node's Lease through its life: renewed before the
// GPUNode appears or after, moved in memory by arrange, deleted.
func TestLeases(t *testing.T) {
	renewed := func(v *View, name string) time.Time {
		t.Helper()
		var got time.Time
		v.Read([]string{name}, "", func(_ string, n *Node) {
			if n == nil {
				t.Fatalf("node %s is not in the view", name)
			}
			got = n.Renewed()
		})
		return got
	}
	v := New()
	v.SetLease("early", now)
	v.SetGPUNode(gpuNode("early", 1))
	v.SetGPUNode(gpuNode("late", 1))
	if got := renewed(v, "late"); !got.IsZero() {
		t.Errorf("node without a Lease renewed at %v", got)
	}
	v.SetLease("late", now)
	for _, name := range []string{"early", "late"} {
		if got := renewed(v, name); !got.Equal(now) {
			t.Errorf("node %s: Lease renewed %v, want %v", name, got, now)
		}
	}
	// arrange copies the nodes; a renewal after it still reaches them.
	v.arrange([]string{"late", "early"})
	later := now.Add(time.Minute)
	v.SetLease("early", later)
	if got := renewed(v, "early"); !got.Equal(later) {
		t.Errorf("after arrange: Lease renewed %v, want %v", got, later)
	}
	v.DeleteLease("early")
	if got := renewed(v, "early"); !got.IsZero() {
		t.Errorf("after the Lease was deleted: renewed %v, want none", got)
	}
	v.SetLease("early", later)
	if got := renewed(v, "early"); !got.Equal(later) {
		t.Errorf("a new Lease: renewed %v, want %v", got, later)
	}
}

// TestReadyUnknownIsNotReady: the scheduler's own stale mark keeps a node
// out even once its Lease is renewed, until the plugin says Ready again.
func TestReadyUnknownIsNotReady(t *testing.T) {
	v := New()
	gn := gpuNode("n1", 1)
	gn.Status.Conditions = []metav1.Condition{{Type: gpuv1alpha1.GPUNodeReady, Status: metav1.ConditionUnknown, Reason: gpuv1alpha1.GPUNodeHeartbeatStale}}
	v.SetGPUNode(gn)
	v.Read([]string{"n1"}, "", func(_ string, n *Node) {
		if n.NotReady != gpuv1alpha1.GPUNodeHeartbeatStale {
			t.Errorf("NotReady = %q, want the stale mark's reason", n.NotReady)
		}
	})
}
