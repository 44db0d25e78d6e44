package tracker

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/quota"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

var managedFields = []metav1.ManagedFieldsEntry{{Manager: "tessera-scheduler", Operation: metav1.ManagedFieldsOperationUpdate,
	FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}}

func fullPod(node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", ResourceVersion: "7", ManagedFields: managedFields,
			Annotations: map[string]string{"tessera.dev/gpu-type": "a100", "nvidia.com/use-gpuuuid": "GPU-1", "kubectl.kubernetes.io/last-applied-configuration": "{...}"},
			Labels:      map[string]string{"app": "x"}},
		Spec: corev1.PodSpec{
			NodeName: node, SchedulerName: "tessera-scheduler",
			InitContainers: []corev1.Container{{Name: "side", Image: "i", RestartPolicy: ptrTo(corev1.ContainerRestartPolicyAlways),
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": mustQ("1"), "nvidia.com/gpumem": mustQ("1000"), corev1.ResourceCPU: mustQ("1")}}}},
			Containers: []corev1.Container{{Name: "main", Image: "i", Env: []corev1.EnvVar{{Name: "A", Value: "B"}},
				Resources: corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{"nvidia.com/gpu": mustQ("2"), "nvidia.com/gpucores": mustQ("30")},
					Requests: corev1.ResourceList{"nvidia.com/gpu": mustQ("2"), "nvidia.com/gpucores": mustQ("30"), corev1.ResourceMemory: mustQ("1Gi")}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"},
	}
}

func trim(t *testing.T, obj any) any {
	t.Helper()
	out, err := Trim(gpurequestNames())(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTrimPod(t *testing.T) {
	tests := []struct {
		name        string
		node        string
		wantRequest bool
	}{
		{name: "a pod not yet bound keeps what bind reads of its request", node: "", wantRequest: true},
		{name: "a bound pod, never bound again, keeps no request", node: "n1", wantRequest: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			full := fullPod(tc.node)
			trimmed := trim(t, full).(*corev1.Pod)
			if trimmed.UID != "u1" || trimmed.Name != "p" || trimmed.Namespace != "ns" || trimmed.ResourceVersion != "7" ||
				trimmed.Spec.NodeName != tc.node || trimmed.Status.Phase != corev1.PodRunning || trimmed.Spec.SchedulerName != "tessera-scheduler" {
				t.Errorf("identity, node or phase lost: %+v", trimmed)
			}
			if trimmed.ManagedFields != nil || trimmed.Labels != nil || trimmed.Status.PodIP != "" {
				t.Errorf("kept what the extender does not read: %+v", trimmed)
			}
			if !tc.wantRequest {
				if trimmed.Spec.Containers != nil || trimmed.Spec.InitContainers != nil || trimmed.Annotations != nil {
					t.Errorf("a bound pod kept its request: %+v", trimmed)
				}
				return
			}
			want, werr := podRequests(full)
			got, gerr := podRequests(trimmed)
			if werr != nil || gerr != nil || !equalRequests(got, want) {
				t.Errorf("trimmed pod's request = %+v (%v), want %+v (%v)", got, gerr, want, werr)
			}
			switch {
			case len(trimmed.Annotations) != 2 || trimmed.Spec.Containers[0].Env != nil:
				t.Errorf("kept what the extender does not read: %+v", trimmed)
			case len(trimmed.Spec.InitContainers[0].Resources.Limits) != 2 || len(trimmed.Spec.Containers[0].Resources.Requests) != 2:
				t.Errorf("kept resources that are not Tessera's: %+v", trimmed.Spec)
			}
		})
	}
}

func TestTrimPodKeepsTheParkedLabel(t *testing.T) {
	for _, node := range []string{"", "n1"} {
		full := fullPod(node)
		full.Labels[gpuv1alpha1.ParkedLabel] = "true"
		trimmed := trim(t, full).(*corev1.Pod)
		if want := map[string]string{gpuv1alpha1.ParkedLabel: "true"}; !reflect.DeepEqual(trimmed.Labels, want) {
			t.Errorf("node %q: labels %v, want %v", node, trimmed.Labels, want)
		}
	}
}

func TestTrimAllocationKeepsWhatTheTrackerReads(t *testing.T) {
	full := &gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "a1", ResourceVersion: "9",
			CreationTimestamp: metav1.NewTime(epoch), ManagedFields: managedFields,
			Annotations:     map[string]string{gpuv1alpha1.BindAnnotation: "token", "example.com/other": "x"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "u1"}}},
		Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: "u1", NodeName: "n1", GPUCount: 2, MemoryMiB: 300,
			Containers: []gpuv1alpha1.ContainerAllocation{
				{Name: "init", Kind: gpuv1alpha1.ContainerInit, Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-a", MemoryMiB: 100, Cores: 10}}},
				{Name: "main", Kind: gpuv1alpha1.ContainerApp, Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-a", MemoryMiB: 100}, {UUID: "GPU-b", Index: 1, MemoryMiB: 200, Cores: 50}}},
			}},
		Status: gpuv1alpha1.GPUAllocationStatus{Phase: gpuv1alpha1.AllocationFailed, Message: "no such GPU",
			ServedContainers: []string{"init"}, AllocatedTime: ptrTo(metav1.NewTime(epoch))},
	}
	trimmed := trim(t, full.DeepCopy()).(*gpuv1alpha1.GPUAllocation)

	want := &gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "a1", ResourceVersion: "9", CreationTimestamp: metav1.NewTime(epoch),
			Annotations: map[string]string{gpuv1alpha1.BindAnnotation: "token"}},
		Spec:   gpuv1alpha1.GPUAllocationSpec{PodUID: "u1", NodeName: "n1", Containers: full.Spec.Containers},
		Status: gpuv1alpha1.GPUAllocationStatus{Phase: gpuv1alpha1.AllocationFailed, Message: "no such GPU"},
	}
	if !reflect.DeepEqual(trimmed, want) {
		t.Errorf("trimmed allocation = %+v, want %+v", trimmed, want)
	}

	// The view holds the same for the trimmed allocation as for the whole one.
	held := func(a *gpuv1alpha1.GPUAllocation) view.Pod {
		v := view.New()
		v.Place(a)
		p, ok := v.Pod(a.Spec.PodUID)
		if !ok {
			t.Fatalf("allocation %s not placed", a.Name)
		}
		return *p
	}
	if got, want := held(trimmed), held(full); !reflect.DeepEqual(got, want) {
		t.Errorf("view of the trimmed allocation = %+v, want %+v", got, want)
	}

	// Trimmed, the allocation a bind wrote still takes the place of the
	// bind's reservation.
	v := view.New()
	r, err := v.ReserveWithin(quota.Limits{}, "u1", "ns", "p", "n1", epoch, func(*view.Node) ([]gpuv1alpha1.ContainerAllocation, error) {
		return full.Spec.Containers, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	own := full.DeepCopy()
	own.Annotations = map[string]string{gpuv1alpha1.BindAnnotation: r.Bind}
	own.Status = gpuv1alpha1.GPUAllocationStatus{}
	v.Place(trim(t, own).(*gpuv1alpha1.GPUAllocation))
	if p, _ := v.Pod("u1"); p.Reserved || p.AllocationUID != "a1" {
		t.Errorf("after its bind's trimmed allocation the pod holds %+v, want the allocation", p)
	}
}

func TestTrimGPUNodeDropsOnlyManagedFields(t *testing.T) {
	full := &gpuv1alpha1.GPUNode{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "g1", ManagedFields: managedFields},
		Spec:       gpuv1alpha1.GPUNodeSpec{CordonedDevices: []string{"GPU-b"}},
		Status: gpuv1alpha1.GPUNodeStatus{DriverVersion: "550", Devices: []gpuv1alpha1.GPUDevice{
			{UUID: "GPU-a", Model: "A100", MemoryMiB: 1024, Cores: 100, ShareLimit: 4, Health: gpuv1alpha1.GPUHealthy}}},
	}
	want := full.DeepCopy()
	want.ManagedFields = nil
	if got := trim(t, full); !reflect.DeepEqual(got, want) {
		t.Errorf("trimmed GPUNode = %+v, want %+v", got, want)
	}
}

func TestTrimPassesOtherObjectsThrough(t *testing.T) {
	tombstone := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: fullPod("n1")}
	if got := trim(t, tombstone); !reflect.DeepEqual(got, tombstone) {
		t.Errorf("a tombstone came out as %+v", got)
	}
}

// TestTrimPodKeepsWhatTheFitGateReads checks that a pending pod keeps its
// scheduling gates, its gang, its preemption policy and its PodScheduled
// condition, which the extender's fit gate reads from the informer, and a
// bound pod drops them.
func TestTrimPodKeepsWhatTheFitGateReads(t *testing.T) {
	never := corev1.PreemptNever
	for _, node := range []string{"", "n1"} {
		full := fullPod(node)
		full.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "other"}, {Name: gpuv1alpha1.FitSchedulingGate}}
		full.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptrTo("g")}
		full.Spec.PreemptionPolicy = &never
		told := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated, Message: "held"}
		full.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady}, told}
		trimmed := trim(t, full).(*corev1.Pod)
		kept := reflect.DeepEqual(trimmed.Spec.SchedulingGates, full.Spec.SchedulingGates) &&
			reflect.DeepEqual(trimmed.Status.Conditions, []corev1.PodCondition{told}) &&
			reflect.DeepEqual(trimmed.Spec.SchedulingGroup, full.Spec.SchedulingGroup) && trimmed.Spec.PreemptionPolicy == &never
		if want := node == ""; kept != want {
			t.Errorf("node %q: gates %v, group %v, preemption %v kept: %v, want %v", node,
				trimmed.Spec.SchedulingGates, trimmed.Spec.SchedulingGroup, trimmed.Spec.PreemptionPolicy, kept, want)
		}
	}
}
