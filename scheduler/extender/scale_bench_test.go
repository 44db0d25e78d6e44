package extender

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	"k8s.io/utils/clock"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/internal/cputime"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// scaleShape is one kind of pod of the scale workload: count GPUs, each
// with memoryMiB (0: all of it) and cores.
type scaleShape struct {
	count, memoryMiB, cores int64
	weight                  int
}

// scaleMix is hack/bench's default mix of pods.
var scaleMix = []scaleShape{
	{1, 8192, 0, 6}, {1, 20480, 30, 4}, {1, 16384, 50, 2}, {1, 0, 0, 4},
	{2, 0, 0, 2}, {4, 16384, 0, 1}, {4, 0, 0, 1},
}

// scaleView builds the cluster of hack/bench's scale mode: nodes with 8
// 80 GiB GPUs shared by at most 10 containers each, and pods of scaleMix
// placed as its placer does (round robin, each on the first node from its
// turn with room, on that node's first GPUs with room). It returns the
// view and the nodes' names. Like the informers at their sync, it records
// the GPUNodes and allocations in no particular order.
func scaleView(b testing.TB, nodes, pods int) (*view.View, []string) {
	b.Helper()
	const gpus, memoryMiB, cores, split = 8, 81920, 100, 10
	v := view.New()
	names := make([]string, nodes)
	hb := metav1.NewTime(time.Now())
	type gpuUse struct{ memoryMiB, cores, shares int64 }
	used := make([][gpus]gpuUse, nodes)
	rng := rand.New(rand.NewPCG(1, 2))
	gpuNodes := make([]*gpuv1alpha1.GPUNode, nodes)
	for i := range nodes {
		names[i] = fmt.Sprintf("bench-node-%05d", i)
		gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: names[i]}}
		for g := range gpus {
			gn.Status.Devices = append(gn.Status.Devices, gpuv1alpha1.GPUDevice{
				UUID: fmt.Sprintf("GPU-%s-%d", names[i], g), Index: int32(g), Model: "NVIDIA A100-SXM4-80GB",
				MemoryMiB: memoryMiB, Cores: cores, ShareLimit: split, NUMANode: int32(g * 2 / gpus), Health: gpuv1alpha1.GPUHealthy,
			})
		}
		gpuNodes[i] = gn
	}
	var allocations []*gpuv1alpha1.GPUAllocation
	// Smooth weighted round robin over the mix, as hack/bench interleaves it.
	current := make([]int, len(scaleMix))
	total := 0
	for _, s := range scaleMix {
		total += s.weight
	}
	for p := range pods {
		best := 0
		for k, s := range scaleMix {
			current[k] += s.weight
			if current[k] > current[best] {
				best = k
			}
		}
		current[best] -= total
		s := scaleMix[best]
		memory := s.memoryMiB
		if memory == 0 {
			memory = memoryMiB
		}
		placed := false
		for k := 0; k < nodes && !placed; k++ {
			node := (p + k) % nodes
			var chosen []int
			for g := range gpus {
				u := used[node][g]
				if u.shares < split && u.memoryMiB+memory <= memoryMiB &&
					((s.cores > 0 && u.cores+s.cores <= cores) || (s.cores == 0 && u.cores < cores)) && int64(len(chosen)) < s.count {
					chosen = append(chosen, g)
				}
			}
			if int64(len(chosen)) < s.count {
				continue
			}
			var devices []gpuv1alpha1.DeviceAllocation
			for _, g := range chosen {
				used[node][g].memoryMiB += memory
				used[node][g].cores += s.cores
				used[node][g].shares++
				devices = append(devices, gpuv1alpha1.DeviceAllocation{
					UUID: fmt.Sprintf("GPU-%s-%d", names[node], g), Index: int32(g), MemoryMiB: memory, Cores: int32(s.cores),
				})
			}
			uid := types.UID(fmt.Sprintf("pod-%06d", p))
			allocations = append(allocations, &gpuv1alpha1.GPUAllocation{
				ObjectMeta: metav1.ObjectMeta{Name: string(uid), Namespace: "bench", UID: "a-" + uid},
				Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: uid, NodeName: names[node], Containers: []gpuv1alpha1.ContainerAllocation{{
					Name: "cuda", Kind: gpuv1alpha1.ContainerApp, Devices: devices,
				}}},
			})
			placed = true
		}
		if !placed {
			b.Fatalf("pod %d fits on no node", p)
		}
	}
	rng.Shuffle(len(gpuNodes), func(i, j int) { gpuNodes[i], gpuNodes[j] = gpuNodes[j], gpuNodes[i] })
	rng.Shuffle(len(allocations), func(i, j int) { allocations[i], allocations[j] = allocations[j], allocations[i] })
	for i := range max(len(gpuNodes), len(allocations)) {
		if i < len(gpuNodes) {
			v.SetGPUNode(gpuNodes[i])
			v.SetLease(gpuNodes[i].Name, hb.Time)
		}
		if i < len(allocations) {
			v.Place(allocations[i])
		}
	}
	return v, names
}

// probePod is hack/bench's probe pod (1 GPU, 8 GiB) as the API server
// returns it, managed fields and defaults included.
func probePod() *corev1.Pod {
	created := metav1.NewTime(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	grace := int64(30)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "bench-probe", Namespace: "bench", UID: "8c3f2a6e-4f7d-4d7e-9b8a-2f1e0c9d7b6a",
			ResourceVersion: "123456", CreationTimestamp: created, Labels: map[string]string{"app": "bench"},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "tessera-bench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &created,
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"cuda\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{".":{},"f:limits":{".":{},"f:nvidia.com/gpu":{},"f:nvidia.com/gpumem":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}`)},
			}},
		},
		Spec: corev1.PodSpec{
			SchedulerName: "tessera-scheduler", RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
			TerminationGracePeriodSeconds: &grace, ServiceAccountName: "default", SecurityContext: &corev1.PodSecurityContext{},
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))},
			},
			Containers: []corev1.Container{{
				Name: "cuda", Image: "registry.k8s.io/pause:3.10", ImagePullPolicy: corev1.PullIfNotPresent,
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi"),
						"nvidia.com/gpu": resource.MustParse("1"), "nvidia.com/gpumem": resource.MustParse("8192")},
					Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), "nvidia.com/gpumem": resource.MustParse("8192")},
				},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", LastTransitionTime: created,
			Message: "0/5000 nodes are available: 5000 node(s) had untolerated taint(s).",
		}}},
	}
}

// BenchmarkServeScale is kube-scheduler's filter call for hack/bench's
// probe pod over every node of its scale cluster (5,000 nodes of 8 GPUs,
// 40,000 pods, the probe fitting about 70% of the nodes), and its
// prioritize call over the feasible nodes, through the HTTP handlers with
// the JSON bodies kube-scheduler sends. It reports the process's CPU time
// per call (cpu-ns/op), garbage collection included.
func BenchmarkServeScale(b *testing.B) {
	v, names := scaleView(b, 5000, 40000)
	ext := New(Config{
		View: v, Clock: clock.RealClock{},
		ResourceNames:     gpurequest.DefaultResourceNames(),
		DefaultNodePolicy: gpurequest.Binpack, DefaultGPUPolicy: gpurequest.Spread,
		HeartbeatMaxAge: time.Hour,
	})
	mux := http.NewServeMux()
	ext.Register(mux)
	pod := probePod()
	serve := func(b *testing.B, path string, body []byte) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
		if rec.Code != http.StatusOK {
			b.Fatalf("%s answered %d: %s", path, rec.Code, rec.Body)
		}
		return rec
	}
	filterBody, err := json.Marshal(&extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names})
	if err != nil {
		b.Fatal(err)
	}
	var result extenderv1.ExtenderFilterResult
	if err := json.Unmarshal(serve(b, "/filter", filterBody).Body.Bytes(), &result); err != nil || result.NodeNames == nil {
		b.Fatalf("filter answered %+v, %v", result, err)
	}
	b.Logf("%d nodes: %d feasible, %d failed, %d unresolvable", len(names), len(*result.NodeNames), len(result.FailedNodes), len(result.FailedAndUnresolvableNodes))
	prioritizeBody, err := json.Marshal(&extenderv1.ExtenderArgs{Pod: pod, NodeNames: result.NodeNames})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		path string
		body []byte
	}{{"/filter", filterBody}, {"/prioritize", prioritizeBody}} {
		b.Run(bc.path[1:], func(b *testing.B) {
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			defer cputime.Report(b, cputime.Process)()
			var w discardWriter
			r := httptest.NewRequest(http.MethodPost, bc.path, nil)
			for b.Loop() {
				r.Body = io.NopCloser(bytes.NewReader(bc.body))
				w.status = 0
				mux.ServeHTTP(&w, r)
				if w.status != http.StatusOK {
					b.Fatalf("%s answered %d", bc.path, w.status)
				}
			}
		})
	}
}

// discardWriter is an http.ResponseWriter that keeps only the status, as
// a server's connection keeps nothing of an answer once sent.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header {
	if w.header == nil {
		w.header = http.Header{}
	}
	return w.header
}

func (w *discardWriter) WriteHeader(status int) { w.status = status }

func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return len(p), nil
}
