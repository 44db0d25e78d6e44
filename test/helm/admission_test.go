package helm

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	gpuac "github.com/tessera-gpu/tessera/generated/applyconfiguration/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	"github.com/tessera-gpu/tessera/test/framework"
)

// nodeNameExtra is the user extra in which a pod-bound service account
// token carries the pod's node.
const nodeNameExtra = "authentication.kubernetes.io/node-name"

// pluginConfig acts as the device plugin's service account, running on
// node (none when empty), through impersonation.
func pluginConfig(cp *framework.ControlPlane, namespace, serviceAccount, node string) *rest.Config {
	config := rest.CopyConfig(cp.Config)
	config.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + namespace + ":" + serviceAccount,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	if node != "" {
		config.Impersonate.Extra = map[string][]string{nodeNameExtra: {node}}
	}
	return config
}

// pluginClient is the Tessera client of pluginConfig.
func pluginClient(t testing.TB, cp *framework.ControlPlane, namespace, serviceAccount, node string) versioned.Interface {
	t.Helper()
	client, err := versioned.NewForConfig(pluginConfig(cp, namespace, serviceAccount, node))
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// pluginKubeClient is the Kubernetes client of pluginConfig.
func pluginKubeClient(t testing.TB, cp *framework.ControlPlane, namespace, serviceAccount, node string) kubernetes.Interface {
	t.Helper()
	client, err := kubernetes.NewForConfig(pluginConfig(cp, namespace, serviceAccount, node))
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// checkOwnNodePolicy checks that the installed ValidatingAdmissionPolicy
// and RBAC hold a device plugin to its own node's GPUNode, Lease and
// allocations.
func checkOwnNodePolicy(ctx context.Context, t *testing.T, cp *framework.ControlPlane, namespace, serviceAccount string) {
	onA := pluginClient(t, cp, namespace, serviceAccount, "node-a")
	onB := pluginClient(t, cp, namespace, serviceAccount, "node-b")
	nowhere := pluginClient(t, cp, namespace, serviceAccount, "")
	gpuNode := func(name string) *gpuv1alpha1.GPUNode {
		return &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}

	// The API server loads a new policy a moment after it is created;
	// until then a write it should refuse goes through and is undone here.
	var refusal error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, refusal = onA.GpuV1alpha1().GPUNodes().Create(ctx, gpuNode("node-b"), metav1.CreateOptions{})
		if refusal == nil {
			return false, cp.Tessera.GpuV1alpha1().GPUNodes().Delete(ctx, "node-b", metav1.DeleteOptions{})
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the device plugin on node-a could still create GPUNode node-b after a minute: %v", err)
	}
	if !strings.Contains(refusal.Error(), "the device plugin on node node-a may write only GPUNode node-a, not node-b") {
		t.Errorf("creating another node's GPUNode was refused with %q, want the policy's message", refusal)
	}

	if _, err := onA.GpuV1alpha1().GPUNodes().Create(ctx, gpuNode("node-a"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the device plugin on node-a could not create its own GPUNode: %v", err)
	}
	// The plugin publishes its status by server-side apply, as here.
	status := func() *gpuac.GPUNodeApplyConfiguration {
		return gpuac.GPUNode("node-a").WithStatus(gpuac.GPUNodeStatus().WithDriverVersion("simulated"))
	}
	apply := metav1.ApplyOptions{FieldManager: "tessera-device-plugin", Force: true}
	if _, err := onA.GpuV1alpha1().GPUNodes().ApplyStatus(ctx, status(), apply); err != nil {
		t.Errorf("the device plugin on node-a could not apply its GPUNode's status: %v", err)
	}
	if _, err := onB.GpuV1alpha1().GPUNodes().ApplyStatus(ctx, status(), apply); err == nil ||
		!strings.Contains(err.Error(), "may write only GPUNode node-b, not node-a") {
		t.Errorf("the device plugin on node-b applying node-a's status: got %v, want the policy's refusal", err)
	}
	if _, err := nowhere.GpuV1alpha1().GPUNodes().Create(ctx, gpuNode("node-c"), metav1.CreateOptions{}); err == nil ||
		!strings.Contains(err.Error(), "credentials name no node") {
		t.Errorf("a device plugin credential without a node creating a GPUNode: got %v, want the policy's refusal", err)
	}

	// An allocation placed on node-b: only node-b's plugin may serve it.
	createNamespace(ctx, t, cp, "team-a")
	alloc := &gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "team-a"},
		Spec: gpuv1alpha1.GPUAllocationSpec{
			PodUID: "0f4bfbc4-64c9-4d2e-9c49-0d3f1d7a5c11", NodeName: "node-b", GPUCount: 1, MemoryMiB: 4000,
			Containers: []gpuv1alpha1.ContainerAllocation{{
				Name: "main", Kind: gpuv1alpha1.ContainerApp,
				Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-b-0", Index: 0, MemoryMiB: 4000, Cores: 30}},
			}},
		},
	}
	alloc, err = cp.Tessera.GpuV1alpha1().GPUAllocations("team-a").Create(ctx, alloc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating an allocation: %v", err)
	}
	alloc.Status.Phase = gpuv1alpha1.AllocationAllocated
	if _, err := onA.GpuV1alpha1().GPUAllocations("team-a").UpdateStatus(ctx, alloc, metav1.UpdateOptions{}); err == nil ||
		!strings.Contains(err.Error(), "may write only allocations on its node, not team-a/job on node node-b") {
		t.Errorf("the device plugin on node-a serving an allocation on node-b: got %v, want the policy's refusal", err)
	}
	if _, err := onB.GpuV1alpha1().GPUAllocations("team-a").UpdateStatus(ctx, alloc, metav1.UpdateOptions{}); err != nil {
		t.Errorf("the device plugin on node-b could not serve an allocation on node-b: %v", err)
	}

	// Its heartbeat: its own node's Lease in the nodes' Lease namespace,
	// and no other.
	leasesOnA := pluginKubeClient(t, cp, namespace, serviceAccount, "node-a").CoordinationV1().Leases(gpuv1alpha1.DefaultNodeLeaseNamespace)
	lease := func(name string) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("plugin"), RenewTime: &metav1.MicroTime{Time: time.Now()}},
		}
	}
	own, err := leasesOnA.Create(ctx, lease("node-a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the device plugin on node-a could not create its node's Lease: %v", err)
	}
	own.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if _, err := leasesOnA.Update(ctx, own, metav1.UpdateOptions{}); err != nil {
		t.Errorf("the device plugin on node-a could not renew its node's Lease: %v", err)
	}
	if _, err := leasesOnA.Create(ctx, lease("node-b"), metav1.CreateOptions{}); err == nil ||
		!strings.Contains(err.Error(), "may renew only Lease node-a, not node-b") {
		t.Errorf("the device plugin on node-a creating node-b's Lease: got %v, want the policy's refusal", err)
	}
	if _, err := cp.Kube.CoordinationV1().Leases(gpuv1alpha1.DefaultNodeLeaseNamespace).Create(ctx, lease("node-b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other, err := leasesOnA.Get(ctx, "node-b", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the device plugin reading a Lease after a conflict: %v", err)
	}
	if _, err := leasesOnA.Update(ctx, other, metav1.UpdateOptions{}); err == nil ||
		!strings.Contains(err.Error(), "may renew only Lease node-a, not node-b") {
		t.Errorf("the device plugin on node-a renewing node-b's Lease: got %v, want the policy's refusal", err)
	}
	// The release namespace holds the scheduler's leader-election Lease:
	// RBAC alone keeps the plugin out, even from a Lease the own-node
	// policy would let it write, so it holds with the policy off.
	inRelease := pluginKubeClient(t, cp, namespace, serviceAccount, "node-a").CoordinationV1().Leases(namespace)
	if _, err := inRelease.Create(ctx, lease("node-a"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "cannot create resource") {
		t.Errorf("the device plugin creating a Lease in the release namespace: got %v, want forbidden by RBAC", err)
	}
	if _, err := cp.Kube.CoordinationV1().Leases(namespace).Create(ctx, lease("node-a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := inRelease.Delete(ctx, "node-a", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the device plugin deleting a Lease in the release namespace: got %v, want forbidden", err)
	}
	createNamespace(ctx, t, cp, "elsewhere")
	if _, err := pluginKubeClient(t, cp, namespace, serviceAccount, "node-a").CoordinationV1().Leases("elsewhere").Create(ctx, lease("node-a"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the device plugin creating a Lease outside its namespace: got %v, want forbidden", err)
	}
}

// checkWebhookSelection creates pods and Jobs with the webhook configured
// but not running: the API server must call it (and so, with failurePolicy
// Fail, refuse the object) exactly for pods and Jobs' pod templates that
// ask for a Tessera resource outside the excluded namespaces and opt-outs.
func checkWebhookSelection(ctx context.Context, t *testing.T, cp *framework.ControlPlane, releaseNamespace string) {
	createNamespace(ctx, t, cp, "workloads")
	optedOut := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "opted-out", Labels: map[string]string{"tessera.dev/webhook": "disabled"}}}
	if _, err := cp.Kube.CoreV1().Namespaces().Create(ctx, optedOut, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gpu := corev1.ResourceList{"nvidia.com/gpumem": resource.MustParse("4000")}
	pod := func(name, namespace string, limits corev1.ResourceList, initLimits corev1.ResourceList, labels map[string]string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "main", Image: "registry.example/app:1", Resources: corev1.ResourceRequirements{Limits: limits},
			}}},
		}
		if initLimits != nil {
			p.Spec.InitContainers = []corev1.Container{{
				Name: "prepare", Image: "registry.example/prepare:1", Resources: corev1.ResourceRequirements{Limits: initLimits},
			}}
		}
		return p
	}

	// Wait until the API server has loaded the webhook configurations: a
	// GPU pod is then refused, since nothing answers at the webhook Service.
	var refusal error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, refusal = cp.Kube.CoreV1().Pods("workloads").Create(ctx, pod("gpu", "workloads", gpu, nil, nil), metav1.CreateOptions{})
		if refusal == nil {
			return false, cp.Kube.CoreV1().Pods("workloads").Delete(ctx, "gpu", metav1.DeleteOptions{})
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("a GPU pod was still created without the webhook after a minute: %v", err)
	}
	if !strings.Contains(refusal.Error(), `"mutate.pods.gpu.tessera.dev"`) {
		t.Errorf("the GPU pod was refused with %q, want a failed call to the webhook", refusal)
	}

	tests := []struct {
		name string
		pod  *corev1.Pod
		sent bool
	}{
		{"a pod that asks for no GPU", pod("cpu", "workloads", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, nil, nil), false},
		{"a pod with no resources", pod("bare", "workloads", nil, nil, nil), false},
		{"a GPU request in an init container", pod("init", "workloads", nil, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}, nil), true},
		{"a GPU count only", pod("count", "workloads", corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}, nil, nil), true},
		{"GPU cores only", pod("cores", "workloads", corev1.ResourceList{"nvidia.com/gpucores": resource.MustParse("30")}, nil, nil), true},
		{"a GPU pod labelled to opt out", pod("labelled", "workloads", gpu, nil, map[string]string{"tessera.dev/webhook": "disabled"}), false},
		{"a GPU pod in an opted-out namespace", pod("gpu", "opted-out", gpu, nil, nil), false},
		{"a GPU pod in the release namespace", pod("gpu", releaseNamespace, gpu, nil, nil), false},
		{"a GPU pod in kube-system", pod("gpu", "kube-system", gpu, nil, nil), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cp.Kube.CoreV1().Pods(tt.pod.Namespace).Create(ctx, tt.pod, metav1.CreateOptions{})
			checkSent(t, err, "pods", tt.sent)
		})
	}
	// A Job is sent by its pod template, which Kueue counts.
	for _, tt := range tests {
		t.Run("a Job of "+tt.name, func(t *testing.T) {
			job := &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: tt.pod.Name, Namespace: tt.pod.Namespace, Labels: tt.pod.Labels},
				Spec:       batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: *tt.pod.Spec.DeepCopy()}},
			}
			job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
			_, err := cp.Kube.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
			checkSent(t, err, "jobs", tt.sent)
		})
	}
}

// checkSent checks that the creation of an object of resource failed at
// its webhook exactly when it should have been sent there.
func checkSent(t *testing.T, err error, resource string, want bool) {
	t.Helper()
	sent := err != nil && strings.Contains(err.Error(), "gpu.tessera.dev")
	if err != nil && !sent {
		t.Fatalf("creating the object: %v", err)
	}
	if sent != want {
		t.Errorf("sent to the webhook = %v, want %v (error: %v)", sent, want, err)
	}
	if sent && !strings.Contains(err.Error(), `"mutate.`+resource+`.gpu.tessera.dev"`) {
		t.Errorf("refused with %q, want a failed call to mutate.%s.gpu.tessera.dev", err, resource)
	}
}
