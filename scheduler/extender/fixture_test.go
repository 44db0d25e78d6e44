package extender

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	tesserafake "github.com/tessera-gpu/tessera/generated/clientset/versioned/fake"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/inflight"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

var epoch = time.Unix(1_700_000_000, 0)

// fixture is an extender over fake clients and a view with these nodes:
// a100-1 and a100-2 with two 80 GB GPUs each, t4 with one 15 GB GPU,
// stale (heartbeat 3 minutes old) and notready (device plugin not ready).
type fixture struct {
	t        *testing.T
	ext      *Extender
	view     *view.View
	gate     *inflight.Gate
	clock    *clocktesting.FakeClock
	kube     *kubefake.Clientset
	tessera  *tesserafake.Clientset
	pods     cache.Indexer
	recorder *events.FakeRecorder
	ready    bool
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{
		t: t, view: view.New(), clock: clocktesting.NewFakeClock(epoch),
		kube: kubefake.NewClientset(), tessera: tesserafake.NewClientset(),
		recorder: events.NewFakeRecorder(100), ready: true,
	}
	f.gate = inflight.NewGate(f.clock, time.Minute, 0, nil)
	podInformer := informers.NewSharedInformerFactory(f.kube, 0).Core().V1().Pods()
	f.pods = podInformer.Informer().GetIndexer()
	f.ext = New(Config{
		View: f.view, Gate: f.gate, Clock: f.clock, Kube: f.kube, Tessera: f.tessera,
		Pods: podInformer.Lister(), Recorder: f.recorder,
		ResourceNames:     gpurequest.DefaultResourceNames(),
		DefaultNodePolicy: gpurequest.Binpack, DefaultGPUPolicy: gpurequest.Spread,
		HeartbeatMaxAge: time.Minute, BindWaitTimeout: 100 * time.Millisecond,
		Ready: func() bool { return f.ready },
	})
	// A node name kept past its call reads as garbage in every test.
	f.ext.calls.poison = true
	// Bindings set the pod's node, as the API server does.
	f.kube.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := action.(clienttesting.CreateAction).GetObject().(*corev1.Binding)
		obj, err := f.kube.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), b.Namespace, b.Name)
		if err != nil {
			return true, nil, err
		}
		p := obj.(*corev1.Pod).DeepCopy()
		p.Spec.NodeName = b.Target.Name
		return true, nil, f.kube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), p, b.Namespace)
	})
	f.gpuNode("a100-1", epoch, "", 80000, 80000)
	f.gpuNode("a100-2", epoch, "", 80000, 80000)
	f.gpuNode("t4", epoch, "", 15000)
	f.gpuNode("stale", epoch.Add(-3*time.Minute), "", 80000)
	f.gpuNode("notready", epoch, "kubelet is gone", 80000)
	return f
}

func (f *fixture) gpuNode(name string, heartbeat time.Time, notReady string, memories ...int64) {
	gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for i, m := range memories {
		model := "NVIDIA A100-SXM4-80GB"
		if m < 20000 {
			model = "Tesla T4"
		}
		gn.Status.Devices = append(gn.Status.Devices, gpuv1alpha1.GPUDevice{
			UUID: fmt.Sprintf("%s-gpu%d", name, i), Index: int32(i), Model: model,
			MemoryMiB: m, Cores: 100, ShareLimit: 4, Health: gpuv1alpha1.GPUHealthy,
		})
	}
	if notReady != "" {
		gn.Status.Conditions = []metav1.Condition{{Type: gpuv1alpha1.GPUNodeReady, Status: metav1.ConditionFalse, Reason: "NotServing", Message: notReady}}
	}
	f.view.SetGPUNode(gn)
	if !heartbeat.IsZero() {
		f.view.SetLease(name, heartbeat)
	}
}

// podSpec builds a pod whose one container asks for these resources, such
// as "nvidia.com/gpumem=10000".
func podSpec(name string, annotations map[string]string, resources ...string) *corev1.Pod {
	limits := corev1.ResourceList{}
	for _, r := range resources {
		k, v, _ := strings.Cut(r, "=")
		limits[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Annotations: annotations},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Limits: limits}}}},
	}
}

// inPodGroup puts the pod in the PodGroup named podGroup.
func inPodGroup(p *corev1.Pod, podGroup string) *corev1.Pod {
	p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(podGroup)}
	return p
}

// privileged makes the pod's containers privileged.
func privileged(p *corev1.Pod) *corev1.Pod {
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	}
	return p
}

// addPod puts a pod in the API and the cache.
func (f *fixture) addPod(p *corev1.Pod) *corev1.Pod {
	if err := f.kube.Tracker().Add(p); err != nil {
		f.t.Fatal(err)
	}
	f.pods.Add(p)
	return p
}

// place records an allocation on one GPU for a pod, as the informer would.
func (f *fixture) place(podName string, uid types.UID, gpu string, memoryMiB int64, cores int32) *gpuv1alpha1.GPUAllocation {
	node := gpu[:strings.LastIndex(gpu, "-")]
	a := &gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: "ns", UID: types.UID("alloc-" + podName)},
		Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: uid, NodeName: node, Containers: []gpuv1alpha1.ContainerAllocation{{
			Name: "main", Kind: gpuv1alpha1.ContainerApp, Devices: []gpuv1alpha1.DeviceAllocation{{UUID: gpu, MemoryMiB: memoryMiB, Cores: cores}},
		}}},
	}
	f.view.Place(a)
	return a
}

// filter makes a filter call as serveFilter does, from the JSON of args to
// the JSON of the answer, and returns the answer as kube-scheduler reads
// it and the outcome the call is counted under.
func (f *fixture) filter(args *extenderv1.ExtenderArgs) (*extenderv1.ExtenderFilterResult, string) {
	f.t.Helper()
	var c call
	c.decode(f.t, args)
	defer c.args.Release()
	outcome := f.ext.filter(f.t.Context(), &c.args, &c.filter)
	out, err := c.filter.appendJSON(nil)
	if err != nil {
		f.t.Fatal(err)
	}
	var result extenderv1.ExtenderFilterResult
	if err := json.Unmarshal(out, &result); err != nil {
		f.t.Fatalf("filter answered with %q: %v", out, err)
	}
	return &result, outcome
}

// prioritize makes a prioritize call as servePrioritize does.
func (f *fixture) prioritize(args *extenderv1.ExtenderArgs) (extenderv1.HostPriorityList, string, error) {
	f.t.Helper()
	var c call
	c.decode(f.t, args)
	defer c.args.Release()
	outcome, err := f.ext.prioritize(f.t.Context(), &c.args, &c.priority)
	if err != nil {
		return nil, outcome, err
	}
	out := c.priority.appendJSON(nil)
	var scores extenderv1.HostPriorityList
	if err := json.Unmarshal(out, &scores); err != nil {
		f.t.Fatalf("prioritize answered with %q: %v", out, err)
	}
	return scores, outcome, nil
}

// decode reads args, encoded as kube-scheduler encodes them, into the call,
// whose body is poisoned when the test ends the call with release.
func (c *call) decode(t *testing.T, args *extenderv1.ExtenderArgs) {
	t.Helper()
	body, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	c.args.Poison = true
	if err := c.args.Read(bytes.NewReader(body)); err != nil {
		t.Fatal(err)
	}
}

// usage returns the memory used on every GPU of the node.
func (f *fixture) usage(node string) []int64 {
	var out []int64
	f.view.Read([]string{node}, "", func(_ string, n *view.Node) {
		if n == nil {
			return
		}
		for _, d := range n.Placement.Devices {
			out = append(out, d.UsedMemoryMiB)
		}
	})
	return out
}

// events drains the recorded events.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
