package kueue

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/webhook/admission"
)

// vgpuTeam is a team's queue as Kueue's "Using HAMi" guide writes one: a
// ResourceFlavor on the nodes labelled gpu=on, a ClusterQueue whose quota
// is in the guide's names (GPUs, and GPU memory and compute summed over
// them), and a LocalQueue, in a namespace Kueue manages.
const vgpuTeam = `
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: vgpu
spec:
  nodeLabels:
    gpu: "on"
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: vgpu
spec:
  namespaceSelector: {}
  resourceGroups:
    - coveredResources: [nvidia.com/gpu, nvidia.com/total-gpucores, nvidia.com/total-gpumem]
      flavors:
        - name: vgpu
          resources:
            - {name: nvidia.com/gpu, nominalQuota: "8"}
            - {name: nvidia.com/total-gpucores, nominalQuota: "400"}
            - {name: nvidia.com/total-gpumem, nominalQuota: "16384"}
---
apiVersion: v1
kind: Namespace
metadata:
  name: vgpu-team
  labels:
    kueue-managed: "true"
---
apiVersion: v1
kind: Namespace
metadata:
  name: vgpu-elsewhere
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: vgpu-queue
  namespace: vgpu-team
spec:
  clusterQueue: vgpu
`

// The guide's resource names.
const (
	totalGPUCores = corev1.ResourceName("nvidia.com/total-gpucores")
	totalGPUMem   = corev1.ResourceName("nvidia.com/total-gpumem")
)

// TestKueueHAMiGuide runs Kueue with the shipped configuration and the
// transformations of deploy/examples/kueue/config/hami-names.yaml, and a
// team's queue written as Kueue's "Using HAMi" guide writes it. A
// Deployment labelled with the team's LocalQueue, whose pod asks for 2
// GPUs of 1024 MiB and 30% compute each, is admitted, counted in the
// guide's names as 2 GPUs, 2048 MiB and 60% of compute, given the
// flavor's node selector and placed on its node; a pod of two containers
// is counted by what each asks for. The same Deployment, a
// Job and a pod in a namespace Kueue does not manage are admitted with a
// warning that says so and what becomes of each.
func TestKueueHAMiGuide(t *testing.T) {
	ctx := context.Background()
	e := startKueue(t, hamiKueueConfig(t))
	e.startTessera(t, nil)
	manifest := filepath.Join(t.TempDir(), "vgpu-team.yaml")
	if err := os.WriteFile(manifest, []byte(vgpuTeam), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := framework.ApplyManifests(ctx, e.cp.Config, manifest); err != nil {
		t.Fatalf("applying the team's queue: %v", err)
	}
	const node = "vgpu-a100"
	e.addNode(ctx, t, node, 4)
	n, err := e.cp.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Labels["gpu"] = "on"
	if _, err := e.cp.Kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	kube, warnings := e.cp.ClientWithWarnings(t)

	guide := slice{gpus: 2, memoryMiB: 1024, cores: 30}
	if _, err := kube.AppsV1().Deployments("vgpu-team").Create(ctx, vgpuDeployment("vgpu-team", "trainer", guide), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Deployment: %v", err)
	}
	if got := queueWarnings(warnings.Take()); len(got) > 0 {
		t.Errorf("warnings creating a Deployment Kueue manages: %q, want none about its queue", got)
	}
	e.waitDeploymentPlaced(ctx, t, e.waitDeploymentPod(ctx, t, "vgpu-team", "trainer"), node)
	e.waitUsage(t, "vgpu", map[corev1.ResourceName]int64{"nvidia.com/gpu": 2, totalGPUMem: 2048, totalGPUCores: 60})

	// A pod of two containers is counted by what each asks for: 10000 MiB
	// and 40 of compute, where the guide's products of the pod's sums
	// would make (8000 + 1000) x 3 MiB and (20 + 10) x 3 of compute.
	if _, err := kube.AppsV1().Deployments("vgpu-team").Create(ctx, vgpuDeployment("vgpu-team", "two-containers",
		slice{gpus: 1, memoryMiB: 8000, cores: 20}, slice{gpus: 2, memoryMiB: 1000, cores: 10}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Deployment of two containers: %v", err)
	}
	e.waitDeploymentPlaced(ctx, t, e.waitDeploymentPod(ctx, t, "vgpu-team", "two-containers"), node)
	e.waitUsage(t, "vgpu", map[corev1.ResourceName]int64{"nvidia.com/gpu": 5, totalGPUMem: 12048, totalGPUCores: 100})

	if _, err := kube.AppsV1().Deployments("vgpu-elsewhere").Create(ctx, vgpuDeployment("vgpu-elsewhere", "trainer", guide), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Deployment elsewhere: %v", err)
	}
	want := `Deployment "trainer" labelled kueue.x-k8s.io/queue-name=vgpu-queue, names a Kueue queue, but Kueue will not manage it: ` +
		`namespace "vgpu-elsewhere" does not match Kueue's managedJobsNamespaceSelector (kueue-managed=true), ` +
		`so Kueue gates its pods for the queue but never admits them: they wait for ever; label the namespace to match`
	if got := queueWarnings(warnings.Take()); len(got) != 1 || got[0] != want {
		t.Errorf("warnings creating a Deployment in a namespace Kueue does not manage: %q, want one saying %q", got, want)
	}
	// What the warning says: the pod waits at Kueue's gate, with no
	// Workload that could ever admit it.
	elsewhere := e.waitDeploymentPod(ctx, t, "vgpu-elsewhere", "trainer")
	if !hasGate(elsewhere) || e.workload(ctx, t, elsewhere) != nil {
		t.Errorf("pod %s/%s of the Deployment Kueue does not manage: gates %v, Workload %v; want Kueue's gate and no Workload",
			elsewhere.Namespace, elsewhere.Name, elsewhere.Spec.SchedulingGates, e.workload(ctx, t, elsewhere) != nil)
	}

	// A Job and a plain pod there are warned about too, each with what
	// becomes of it: the Job waits suspended, the pod runs past the queue.
	job := gpuJob("vgpu-elsewhere", "elsewhere", 1, slice{gpus: 1, memoryMiB: 1024, cores: 30})
	job.Labels[queueLabel] = "vgpu-queue"
	createdJob, err := kube.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Job %s: %v", job.Name, err)
	}
	want = `so Kueue suspends it for its queue but never admits it: it waits for ever`
	if got := queueWarnings(warnings.Take()); len(got) != 1 || !strings.Contains(got[0], want) {
		t.Errorf("warnings creating a Job in a namespace Kueue does not manage: %q, want one saying %q", got, want)
	}
	if !ptr.Deref(createdJob.Spec.Suspend, false) || e.workload(ctx, t, createdJob) != nil {
		t.Errorf("Job %s: suspend %v, Workload %v; want it suspended with no Workload", job.Name, createdJob.Spec.Suspend, e.workload(ctx, t, createdJob) != nil)
	}
	createdPod, err := kube.CoreV1().Pods("vgpu-elsewhere").Create(ctx,
		plainPod("vgpu-elsewhere", "notebook", map[string]string{queueLabel: "vgpu-queue"}, slice{gpus: 1, memoryMiB: 1024, cores: 30}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the pod: %v", err)
	}
	want = `so Kueue does not gate it: it runs without waiting in the queue or counting against its quota`
	if got := queueWarnings(warnings.Take()); len(got) != 1 || !strings.Contains(got[0], want) {
		t.Errorf("warnings creating a pod in a namespace Kueue does not manage: %q, want one saying %q", got, want)
	}
	if hasGate(createdPod) {
		t.Errorf("pod %s/%s: gates %v, want none", createdPod.Namespace, createdPod.Name, createdPod.Spec.SchedulingGates)
	}
	e.cp.CheckGPUAccounting(ctx, t, admission.DefaultSchedulerName)
}

// hamiKueueConfig writes the shipped Kueue configuration with the
// transformations of deploy/examples/kueue/config/hami-names.yaml under
// resources, and returns its path.
func hamiKueueConfig(t *testing.T) string {
	t.Helper()
	root := framework.RepoRoot()
	var config, names map[string]any
	for file, into := range map[string]*map[string]any{
		framework.KueueConfigFile:                      &config,
		"deploy/examples/kueue/config/hami-names.yaml": &names,
	} {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, into); err != nil {
			t.Fatalf("decoding %s: %v", file, err)
		}
	}
	resources, _ := config["resources"].(map[string]any)
	if resources == nil {
		t.Fatalf("%s has no resources", framework.KueueConfigFile)
	}
	resources["transformations"] = names["transformations"]
	out, err := yaml.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kueue-config.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// vgpuDeployment is a Deployment of one pod in the LocalQueue
// vgpu-queue, a container for each of asks, each written per GPU.
func vgpuDeployment(namespace, name string, asks ...slice) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	var containers []corev1.Container
	for i, s := range asks {
		containers = append(containers, corev1.Container{
			Name: fmt.Sprintf("main-%d", i), Image: "registry.example/burn:1",
			Resources: corev1.ResourceRequirements{Limits: s.perGPU()},
		})
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{queueLabel: "vgpu-queue"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0), Containers: containers},
			},
		},
	}
}

// queueWarnings are the warnings about a Kueue queue among got.
func queueWarnings(got []string) []string {
	var out []string
	for _, w := range got {
		if strings.Contains(w, admission.KueueQueueLabel) {
			out = append(out, w)
		}
	}
	return out
}

// waitDeploymentPod waits for the one pod of the Deployment name in
// namespace and returns it.
func (e *env) waitDeploymentPod(ctx context.Context, t *testing.T, namespace, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	framework.WaitFor(t, time.Minute, "the pod of Deployment "+namespace+"/"+name, func() (bool, string) {
		list, err := e.cp.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil || len(list.Items) != 1 {
			return false, fmt.Sprintf("%d pods (%v)", len(list.Items), err)
		}
		pod = &list.Items[0]
		return true, ""
	})
	return pod
}

// waitDeploymentPlaced waits until Kueue has admitted the Workload of a
// Deployment's pod to ClusterQueue vgpu, ungated the pod with the
// flavor's node selector, and Tessera has placed it on node.
func (e *env) waitDeploymentPlaced(ctx context.Context, t *testing.T, pod *corev1.Pod, node string) {
	t.Helper()
	framework.WaitFor(t, time.Minute, "Kueue to admit the Workload of pod "+pod.Name+" to ClusterQueue vgpu", func() (bool, string) {
		wl := e.workload(ctx, t, pod)
		if wl == nil {
			return false, "no Workload yet"
		}
		cq, _, _ := unstructured.NestedString(wl.Object, "status", "admission", "clusterQueue")
		return cq == "vgpu" && condition(wl, "Admitted")["status"] == "True",
			fmt.Sprintf("clusterQueue %q, QuotaReserved %v", cq, condition(wl, "QuotaReserved"))
	})
	framework.WaitFor(t, time.Minute, "pod "+pod.Name+" to be ungated and placed on "+node, func() (bool, string) {
		got, err := e.cp.Kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		alloc, err := e.cp.Tessera.GpuV1alpha1().GPUAllocations(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		placed := err == nil && alloc.Spec.PodUID == got.UID && got.Spec.NodeName == node && alloc.Status.Phase == "Allocated"
		return !hasGate(got) && got.Spec.NodeSelector["gpu"] == "on" && placed,
			fmt.Sprintf("gates %v, node %q, nodeSelector %v, allocation: %v", got.Spec.SchedulingGates, got.Spec.NodeName, got.Spec.NodeSelector, err)
	})
}
