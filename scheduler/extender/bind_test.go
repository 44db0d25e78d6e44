package extender

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/commit"
	"github.com/tessera-gpu/tessera/scheduler/metrics"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/quota"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

func bindArgs(pod *corev1.Pod, node string) *extenderv1.ExtenderBindingArgs {
	return &extenderv1.ExtenderBindingArgs{PodName: pod.Name, PodNamespace: pod.Namespace, PodUID: pod.UID, Node: node}
}

// recordingRequeue records what the extender tells the requeuer.
type recordingRequeue struct {
	rejected, forgotten []types.UID
	freed               []string
	serves              []func(*placement.Fitter, string) bool
}

func (r *recordingRequeue) Rejected(pod *corev1.Pod, serves func(*placement.Fitter, string) bool) {
	r.rejected = append(r.rejected, pod.UID)
	r.serves = append(r.serves, serves)
}
func (r *recordingRequeue) Forget(uid types.UID) { r.forgotten = append(r.forgotten, uid) }
func (r *recordingRequeue) Freed(node string)    { r.freed = append(r.freed, node) }

func TestRequeueIsTold(t *testing.T) {
	f := newFixture(t)
	r := &recordingRequeue{}
	f.ext.Requeue = r
	names := []string{"t4"}
	f.filter(&extenderv1.ExtenderArgs{Pod: podSpec("fits", nil, "nvidia.com/gpu=1"), NodeNames: &names})
	f.filter(&extenderv1.ExtenderArgs{Pod: podSpec("big", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=20000"), NodeNames: &names})
	f.filter(&extenderv1.ExtenderArgs{Pod: podSpec("bad", nil, "nvidia.com/gpumem=-1"), NodeNames: &names})
	if !reflect.DeepEqual(r.rejected, []types.UID{"uid-big"}) {
		t.Fatalf("rejected %v, want only the pod no node fits", r.rejected)
	}
	var ft placement.Fitter
	if r.serves[0](&ft, "t4") || !r.serves[0](&ft, "a100-1") {
		t.Errorf("the requeuer is told a T4 could take 20000 MiB, or an A100 could not")
	}
	pod := f.addPod(podSpec("fits", nil, "nvidia.com/gpu=1"))
	if _, err := f.ext.Bind(t.Context(), bindArgs(pod, "t4")); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.forgotten, []types.UID{"uid-fits"}) {
		t.Errorf("forgot %v, want the bound pod", r.forgotten)
	}
}

func TestBindSuccess(t *testing.T) {
	f := newFixture(t)
	pod := f.addPod(podSpec("p", nil, "nvidia.com/gpu=2", "nvidia.com/gpumem=10000", "nvidia.com/gpucores=20"))
	outcome, err := f.ext.Bind(t.Context(), bindArgs(pod, "a100-1"))
	if err != nil || outcome != metrics.ResultSuccess {
		t.Fatalf("Bind = %s, %v", outcome, err)
	}

	a, err := f.tessera.GpuV1alpha1().GPUAllocations("ns").Get(t.Context(), "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := metav1.GetControllerOf(a)
	switch {
	case owner == nil || owner.Kind != "Pod" || owner.UID != pod.UID || owner.Name != "p":
		t.Errorf("owner = %+v, want the pod as controller", owner)
	case a.Spec.PodUID != pod.UID || a.Spec.NodeName != "a100-1" || a.Spec.GPUCount != 2 || a.Spec.GPUIndexes != "0,1" || a.Spec.MemoryMiB != 20000:
		t.Errorf("spec = %+v", a.Spec)
	case len(a.Spec.Containers) != 1 || len(a.Spec.Containers[0].Devices) != 2 || a.Spec.Containers[0].Devices[0].Cores != 20:
		t.Errorf("containers = %+v", a.Spec.Containers)
	case a.Status.Phase != "":
		// The API server shows an empty status as Pending; the extender
		// writes none.
		t.Errorf("phase = %q, want none written", a.Status.Phase)
	}
	bound, _ := f.kube.CoreV1().Pods("ns").Get(t.Context(), "p", metav1.GetOptions{})
	if bound.Spec.NodeName != "a100-1" {
		t.Errorf("pod bound to %q", bound.Spec.NodeName)
	}
	if got := f.usage("a100-1"); !reflect.DeepEqual(got, []int64{10000, 10000}) {
		t.Errorf("view usage = %v, want the reservation on both GPUs", got)
	}
	if uid, ok := f.gate.InFlight("a100-1"); !ok || uid != pod.UID {
		t.Errorf("in flight = %q, %v; want the pod", uid, ok)
	}
	if ev := f.events(); len(ev) != 0 {
		t.Errorf("events = %v, want none for a bind that succeeded", ev)
	}

	// The informer then delivers the allocation: it replaces the reservation.
	f.view.Place(a)
	if got := f.usage("a100-1"); !reflect.DeepEqual(got, []int64{10000, 10000}) {
		t.Errorf("usage after the informer = %v, want it counted once", got)
	}
}

func TestBindFailures(t *testing.T) {
	gpuPod := func() *corev1.Pod { return podSpec("p", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=10000") }
	tests := []struct {
		name       string
		setup      func(f *fixture) *extenderv1.ExtenderBindingArgs
		wantError  string
		wantResult string
		wantEvent  string
		wantUsage  []int64 // on a100-1 afterwards
	}{
		{
			name: "node no longer fits",
			setup: func(f *fixture) *extenderv1.ExtenderBindingArgs {
				f.place("a", "uid-a", "a100-1-gpu0", 75000, 0)
				f.place("b", "uid-b", "a100-1-gpu1", 75000, 0)
				return bindArgs(f.addPod(gpuPod()), "a100-1")
			},
			wantError: "pod ns/p no longer fits node a100-1: it had 0/2 GPUs that fit (2 not enough memory)", wantResult: metrics.ResultUnschedulable,
			wantEvent: "Warning FailedGPUPlacement", wantUsage: []int64{75000, 75000},
		},
		{
			name: "stale heartbeat",
			setup: func(f *fixture) *extenderv1.ExtenderBindingArgs {
				return bindArgs(f.addPod(gpuPod()), "stale")
			},
			wantError: "device plugin heartbeat is stale", wantResult: metrics.ResultUnschedulable,
			wantEvent: "Warning FailedGPUPlacement", wantUsage: []int64{0, 0},
		},
		{
			name: "binding refused: the allocation is deleted and the GPUs freed",
			setup: func(f *fixture) *extenderv1.ExtenderBindingArgs {
				f.kube.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
					if action.GetSubresource() == "binding" {
						return true, nil, apierrors.NewConflict(corev1.Resource("pods/binding"), "p", errors.New("pod p is being deleted"))
					}
					return false, nil, nil
				})
				return bindArgs(f.addPod(gpuPod()), "a100-1")
			},
			wantError: "binding pod ns/p to node a100-1: Operation cannot be fulfilled on pods/binding \"p\": pod p is being deleted", wantResult: metrics.ResultError,
			wantEvent: "Warning FailedGPUPlacement", wantUsage: []int64{0, 0},
		},
		{
			name: "allocation cannot be created",
			setup: func(f *fixture) *extenderv1.ExtenderBindingArgs {
				f.tessera.PrependReactor("create", "gpuallocations", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(gpuv1alpha1.SchemeGroupVersion.WithResource("gpuallocations").GroupResource(), "p", errors.New("quota"))
				})
				return bindArgs(f.addPod(gpuPod()), "a100-1")
			},
			wantError: "creating GPU allocation ns/p", wantResult: metrics.ResultError,
			wantEvent: "Warning FailedGPUPlacement", wantUsage: []int64{0, 0},
		},
		{
			name: "node busy with another in-flight allocation past the bind wait",
			setup: func(f *fixture) *extenderv1.ExtenderBindingArgs {
				f.gate.Observe("a100-1", "uid-other", "alloc-other", epoch)
				return bindArgs(f.addPod(gpuPod()), "a100-1")
			},
			wantError: "waiting for the in-flight allocation on node a100-1: bind wait timeout of 100ms passed", wantResult: metrics.ResultError,
			wantEvent: "Warning FailedGPUPlacement", wantUsage: []int64{0, 0},
		},
		{
			name: "pod already bound",
			setup: func(f *fixture) *extenderv1.ExtenderBindingArgs {
				p := gpuPod()
				p.Spec.NodeName = "a100-2"
				return bindArgs(f.addPod(p), "a100-1")
			},
			wantError: "pod ns/p is already bound to node a100-2", wantResult: metrics.ResultInvalid, wantUsage: []int64{0, 0},
		},
		{
			name: "unknown pod",
			setup: func(f *fixture) *extenderv1.ExtenderBindingArgs {
				return bindArgs(gpuPod(), "a100-1")
			},
			wantError: `pods "p" not found`, wantResult: metrics.ResultInvalid, wantUsage: []int64{0, 0},
		},
		{
			name: "pod replaced by another of the same name",
			setup: func(f *fixture) *extenderv1.ExtenderBindingArgs {
				args := bindArgs(f.addPod(gpuPod()), "a100-1")
				args.PodUID = "uid-old"
				return args
			},
			wantError: "pod ns/p has UID uid-p, not uid-old", wantResult: metrics.ResultInvalid, wantUsage: []int64{0, 0},
		},
		{
			// A pod the webhook never saw: the kubelet would never call
			// Allocate for it, so it must not take the node's turn.
			name: "a slice without a GPU count takes no turn and no GPU",
			setup: func(f *fixture) *extenderv1.ExtenderBindingArgs {
				return bindArgs(f.addPod(podSpec("p", nil, "nvidia.com/gpumem=10000")), "a100-1")
			},
			wantError: "add nvidia.com/gpu: 1 to its resources.limits", wantResult: metrics.ResultInvalid, wantUsage: []int64{0, 0},
		},
		{
			name: "a privileged container asking for a slice takes no GPU",
			setup: func(f *fixture) *extenderv1.ExtenderBindingArgs {
				return bindArgs(f.addPod(privileged(gpuPod())), "a100-1")
			},
			wantError: "securityContext.privileged: Forbidden", wantResult: metrics.ResultInvalid, wantUsage: []int64{0, 0},
		},
		{
			name: "an over-long node name is refused without being echoed",
			setup: func(f *fixture) *extenderv1.ExtenderBindingArgs {
				args := bindArgs(f.addPod(gpuPod()), strings.Repeat("n", 1<<20))
				return args
			},
			wantError: "Node: Too long: may not be more than 253 bytes", wantResult: metrics.ResultInvalid, wantUsage: []int64{0, 0},
		},
		{
			name: "missing fields are named",
			setup: func(f *fixture) *extenderv1.ExtenderBindingArgs {
				return &extenderv1.ExtenderBindingArgs{PodName: "p"}
			},
			wantError: "[PodNamespace: Required value, PodUID: Required value, Node: Required value]", wantResult: metrics.ResultInvalid, wantUsage: []int64{0, 0},
		},
		{
			name: "not synced yet",
			setup: func(f *fixture) *extenderv1.ExtenderBindingArgs {
				f.ready = false
				return bindArgs(f.addPod(gpuPod()), "a100-1")
			},
			wantError: "extender is not ready", wantResult: metrics.ResultError, wantUsage: []int64{0, 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			args := tc.setup(f)
			outcome, err := f.ext.Bind(t.Context(), args)
			if err == nil || !strings.Contains(err.Error(), tc.wantError) {
				t.Fatalf("err = %.300v, want %q", err, tc.wantError)
			}
			if len(err.Error()) > 1024 {
				t.Errorf("the error is %d bytes long, want at most 1024: %.300s...", len(err.Error()), err)
			}
			if outcome != tc.wantResult {
				t.Errorf("result = %s, want %s", outcome, tc.wantResult)
			}
			if got := f.usage("a100-1"); !reflect.DeepEqual(got, tc.wantUsage) {
				t.Errorf("a100-1 usage = %v, want %v", got, tc.wantUsage)
			}
			if _, err := f.tessera.GpuV1alpha1().GPUAllocations("ns").Get(t.Context(), "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("allocation left behind: %v", err)
			}
			if uid, ok := f.gate.InFlight("a100-1"); ok && uid == types.UID("uid-p") {
				t.Error("the failed pod is still in flight")
			}
			ev := f.events()
			if tc.wantEvent == "" && len(ev) > 0 || tc.wantEvent != "" && (len(ev) != 1 || !strings.Contains(ev[0], tc.wantEvent)) {
				t.Errorf("events = %v, want %q", ev, tc.wantEvent)
			}
		})
	}
}

func TestBindReplacesStaleAllocations(t *testing.T) {
	tests := []struct {
		name  string
		stale func(f *fixture) *gpuv1alpha1.GPUAllocation
	}{
		{
			name: "the pod's own allocation from an unfinished bind",
			stale: func(f *fixture) *gpuv1alpha1.GPUAllocation {
				return f.place("p", "uid-p", "a100-1-gpu0", 70000, 0)
			},
		},
		{
			name: "an orphan of an earlier pod of the same name the view does not hold",
			stale: func(f *fixture) *gpuv1alpha1.GPUAllocation {
				a := f.place("p", "uid-earlier", "a100-1-gpu0", 70000, 0)
				f.view.ReleaseAllocation(a)
				return a
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			stale := tc.stale(f)
			if err := f.tessera.Tracker().Add(stale); err != nil {
				t.Fatal(err)
			}
			pod := f.addPod(podSpec("p", map[string]string{"tessera.dev/gpu-policy": "binpack"}, "nvidia.com/gpu=1", "nvidia.com/gpumem=20000"))
			if _, err := f.ext.Bind(t.Context(), bindArgs(pod, "a100-1")); err != nil {
				t.Fatal(err)
			}
			a, err := f.tessera.GpuV1alpha1().GPUAllocations("ns").Get(t.Context(), "p", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if a.Spec.PodUID != pod.UID || a.Spec.MemoryMiB != 20000 {
				t.Errorf("allocation = %+v, want the new one", a.Spec)
			}
			used := f.usage("a100-1")
			if used[0]+used[1] != 20000 {
				t.Errorf("usage = %v, want only the new 20000 MiB", used)
			}
			// A late event about the stale allocation changes nothing.
			f.view.Place(stale)
			f.view.ReleaseAllocation(stale)
			if again := f.usage("a100-1"); !reflect.DeepEqual(again, used) {
				t.Errorf("usage after stale events = %v, want %v", again, used)
			}
		})
	}
}

// TestBindKeepsTheAllocationOfAPodTheCacheShowsUnbound binds a pod that the
// cache, lagging behind, shows unbound while the API server has it bound
// with its allocation served: the bind is refused and the allocation, the
// record of the GPUs the pod uses, stays.
func TestBindKeepsTheAllocationOfAPodTheCacheShowsUnbound(t *testing.T) {
	tests := []struct {
		name string
		// inView: the view holds the served allocation; otherwise its
		// watch lags too and the bind meets it only when creating its own.
		inView bool
	}{
		{name: "the view holds the allocation", inView: true},
		{name: "the view does not hold it yet"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			served := f.place("p", "uid-p", "a100-1-gpu0", 70000, 0)
			served.Status.Phase = gpuv1alpha1.AllocationAllocated
			if err := f.tessera.Tracker().Add(served); err != nil {
				t.Fatal(err)
			}
			if !tc.inView {
				f.view.ReleaseAllocation(served)
			}
			cached := podSpec("p", map[string]string{"tessera.dev/gpu-policy": "binpack"}, "nvidia.com/gpu=1", "nvidia.com/gpumem=20000")
			f.pods.Add(cached)
			bound := cached.DeepCopy()
			bound.Spec.NodeName = "a100-1"
			if err := f.kube.Tracker().Add(bound); err != nil {
				t.Fatal(err)
			}

			_, err := f.ext.Bind(t.Context(), bindArgs(cached, "a100-2"))
			if err == nil || !strings.Contains(err.Error(), "already bound to node a100-1") {
				t.Fatalf("Bind error = %v, want the pod already bound", err)
			}
			a, err := f.tessera.GpuV1alpha1().GPUAllocations("ns").Get(t.Context(), "p", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the served allocation is gone: %v", err)
			}
			if a.UID != served.UID || a.Spec.NodeName != "a100-1" {
				t.Errorf("allocation = %s on %s, want the served %s on a100-1", a.UID, a.Spec.NodeName, served.UID)
			}
		})
	}
}

// TestBindKeepsTheTurnOfAnAllocationLeftPending fails binds that leave
// the pod's GPUAllocation pending on the node: the API server made it and
// the answer got lost (kube-scheduler gave up on the bind, the extender
// stopped), the binding's answer was lost, or the binding was refused and
// the allocation could not be deleted. The node's turn then stays with it, and the next bind there
// waits, so that the node never has two pending at once. A create the
// server refused, or an allocation deleted, frees the turn at once
// (TestBindFailures).
func TestBindKeepsTheTurnOfAnAllocationLeftPending(t *testing.T) {
	lost := fmt.Errorf("Post \"https://127.0.0.1/apis/gpu.tessera.dev/v1alpha1/namespaces/ns/gpuallocations\": %w", context.Canceled)
	tests := []struct {
		name      string
		setup     func(f *fixture)
		wantError string
	}{
		{
			name: "the create's answer was lost",
			setup: func(f *fixture) {
				f.tessera.PrependReactor("create", "gpuallocations", func(action clienttesting.Action) (bool, runtime.Object, error) {
					create := action.(clienttesting.CreateAction)
					if err := f.tessera.Tracker().Create(action.GetResource(), create.GetObject(), action.GetNamespace()); err != nil {
						return true, nil, err
					}
					return true, nil, lost
				})
			},
			wantError: "context canceled",
		},
		{
			// The server may yet bind the pod: the device plugin would
			// then find no allocation for it, or serve it another's.
			name: "the binding's answer was lost and the pod reads unbound",
			setup: func(f *fixture) {
				f.kube.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
					if action.GetSubresource() == "binding" {
						return true, nil, fmt.Errorf("Post \"https://127.0.0.1/api/v1/namespaces/ns/pods/p/binding\": %w", context.Canceled)
					}
					return false, nil, nil
				})
			},
			wantError: "context canceled",
		},
		{
			name: "the binding was refused and the allocation could not be deleted",
			setup: func(f *fixture) {
				f.kube.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
					if action.GetSubresource() == "binding" {
						return true, nil, apierrors.NewConflict(corev1.Resource("pods/binding"), "p", errors.New("node is being deleted"))
					}
					return false, nil, nil
				})
				f.tessera.PrependReactor("delete", "gpuallocations", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewServiceUnavailable("etcd is away")
				})
			},
			wantError: "node is being deleted",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.setup(f)
			gpuPod := func(name string) *corev1.Pod {
				return f.addPod(podSpec(name, nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=10000"))
			}
			if _, err := f.ext.Bind(t.Context(), bindArgs(gpuPod("p"), "a100-1")); err == nil || !strings.Contains(err.Error(), tc.wantError) {
				t.Fatalf("err = %v, want %q", err, tc.wantError)
			}
			if _, err := f.tessera.GpuV1alpha1().GPUAllocations("ns").Get(t.Context(), "p", metav1.GetOptions{}); err != nil {
				t.Fatalf("the allocation left pending: %v", err)
			}
			if uid, ok := f.gate.InFlight("a100-1"); !ok || uid != "uid-p" {
				t.Fatalf("in flight on a100-1 = %q, %v; want the pod whose allocation is pending", uid, ok)
			}
			_, err := f.ext.Bind(t.Context(), bindArgs(gpuPod("q"), "a100-1"))
			if err == nil || !strings.Contains(err.Error(), "waiting for the in-flight allocation on node a100-1") {
				t.Errorf("the next bind to the node: err = %v, want it to wait behind the pending allocation", err)
			}
		})
	}
}

// TestFailedBindGivesTheGangItsRoom binds a gang's pod on a node other
// than its hold's, which wakes the pods waiting for the hold's node, and
// fails the binding: the gang holds room for the pod again, where the
// pod was reserved, rather than leaving it to whoever asks next.
func TestFailedBindGivesTheGangItsRoom(t *testing.T) {
	f := newFixture(t)
	r := &recordingRequeue{}
	f.ext.Requeue = r
	f.kube.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() == "binding" {
			return true, nil, apierrors.NewConflict(corev1.Resource("pods/binding"), "p", errors.New("pod p is being deleted"))
		}
		return false, nil, nil
	})
	pod := f.addPod(podSpec("p", map[string]string{gpuv1alpha1.GangHoldAnnotation: "w/main"}, "nvidia.com/gpu=1", "nvidia.com/gpumem=60000"))
	req, err := f.ext.request(pod)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := f.view.HoldGang("w/main", "ns", "w", nil, []view.GangMember{{Request: req.Request, Policy: req.NodePolicy}}, f.ext.rules(), quota.Limits{}, epoch)
	if err != nil {
		t.Fatal(err)
	}
	other := "a100-2"
	if nodes[0] == other {
		other = "a100-1"
	}
	f.view.JoinGang(pod)
	if _, err := f.ext.Bind(t.Context(), bindArgs(pod, other)); err == nil {
		t.Fatal("the bind succeeded, want the binding refused")
	}
	if !reflect.DeepEqual(r.freed, nodes) {
		t.Errorf("the requeuer was told %v freed, want the hold's node %v", r.freed, nodes)
	}
	if got := f.view.GangHeld("w/main"); got != 1 {
		t.Errorf("after the failed bind the gang holds room for %d pods, want 1", got)
	}
	if got := f.usage(other); got[0]+got[1] != 60000 {
		t.Errorf("%s uses %v after the failed bind, want the gang's 60000 MiB held there", other, got)
	}
}

// TestBindKeepsTheReservationOfAnAllocationKept fails bindings whose
// outcome is unknown, so that the pod may be bound and its allocation is
// kept: the GPUs stay reserved in the view, where no other pod is placed
// on them while the allocation informer lags, until the allocation takes
// the reservation's place.
func TestBindKeepsTheReservationOfAnAllocationKept(t *testing.T) {
	tests := []struct {
		name  string
		setup func(f *fixture)
	}{
		{
			name: "the binding's answer was lost and the pod reads unbound",
			setup: func(f *fixture) {
				f.kube.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
					if action.GetSubresource() == "binding" {
						return true, nil, fmt.Errorf("Post \"https://127.0.0.1/api/v1/namespaces/ns/pods/p/binding\": %w", context.Canceled)
					}
					return false, nil, nil
				})
			},
		},
		{
			name: "the binding's answer was lost and the pod cannot be read",
			setup: func(f *fixture) {
				f.kube.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
					if action.GetSubresource() == "binding" {
						return true, nil, apierrors.NewServiceUnavailable("etcd is away")
					}
					return false, nil, nil
				})
				f.kube.PrependReactor("get", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewServiceUnavailable("etcd is away")
				})
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.setup(f)
			pod := f.addPod(podSpec("p", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=80000"))
			_, err := f.ext.Bind(t.Context(), bindArgs(pod, "a100-1"))
			if !errors.Is(err, commit.ErrAllocationKept) {
				t.Fatalf("err = %v, want the allocation kept", err)
			}
			if got := f.usage("a100-1"); got[0]+got[1] != 80000 {
				t.Fatalf("a100-1 uses %v after a binding that may have been made, want the pod's 80000 MiB still reserved", got)
			}
			a, err := f.tessera.GpuV1alpha1().GPUAllocations("ns").Get(t.Context(), "p", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			f.view.Place(a)
			if got := f.usage("a100-1"); got[0]+got[1] != 80000 {
				t.Errorf("a100-1 uses %v once the allocation is seen, want the 80000 MiB it records, counted once", got)
			}
		})
	}
}
