package scheduler

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/test/framework"
)

const (
	namespace     = "default"
	schedulerName = "tessera-scheduler"
	// groupLabel keeps each test's pods on that test's nodes.
	groupLabel = "e2e.tessera.dev/group"
)

// gpuSpec is one simulated GPU.
type gpuSpec struct {
	model     string
	memoryMiB int64
	numa      int32
	shares    int32
	// mig, when set, is the profile of the MIG instance this GPU is.
	mig string
	// geometry, when set, makes the GPU's MIG instances on demand.
	geometry *gpuv1alpha1.MIGGeometry
}

func a100(numa int32) gpuSpec { return gpuSpec{"NVIDIA A100-SXM4-80GB", 81920, numa, 10, "", nil} }
func t4() gpuSpec             { return gpuSpec{"Tesla T4", 15360, 0, 10, "", nil} }

// migInstance is a MIG instance of an A100 40GB, had alone.
func migInstance(profile string, memoryMiB int64) gpuSpec {
	return gpuSpec{"NVIDIA A100-SXM4-40GB MIG " + profile, memoryMiB, 0, 1, profile, nil}
}

// addNode creates a Node whose device plugin advertises split virtual GPUs
// per GPU, and its GPUNode with the GPUs and a fresh heartbeat, and waits
// until the extender sees it. In plugin mode it does not wait: the plugin
// retries pods when a GPUNode appears.
func (e *env) addNode(ctx context.Context, t *testing.T, name, group string, split int32, gpus ...gpuSpec) []gpuv1alpha1.GPUDevice {
	t.Helper()
	count := resource.MustParse(strconv.Itoa(len(gpus) * int(split)))
	names := gpurequest.DefaultResourceNames()
	node := framework.CreateReadyNode(ctx, t, e.cp.Kube, name, corev1.ResourceList{names.Count: count})
	node.Labels[groupLabel] = group
	if _, err := e.cp.Kube.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("labelling node %s: %v", name, err)
	}
	status := gpuv1alpha1.GPUNodeStatus{GPUCount: int32(len(gpus)), DriverVersion: "simulated"}
	for i, g := range gpus {
		status.Devices = append(status.Devices, gpuv1alpha1.GPUDevice{
			UUID:       fmt.Sprintf("GPU-%s-%d", name, i),
			Index:      int32(i),
			Model:      g.model,
			MemoryMiB:  g.memoryMiB,
			Cores:      100,
			ShareLimit: g.shares,
			NUMANode:   g.numa,
			Health:     gpuv1alpha1.GPUHealthy,
		})
		if g.mig != "" {
			status.Devices[i].MIG = &gpuv1alpha1.MIGInstance{ParentUUID: "GPU-" + name + "-parent", Profile: g.mig}
		}
		status.Devices[i].MIGGeometry = g.geometry
	}
	gn := framework.CreateGPUNode(ctx, t, e.cp.Tessera, name, &status)
	framework.RenewNodeLease(ctx, t, e.cp.Kube, name, time.Now())
	// Pods are created only once the scheduler has seen the node's
	// heartbeat: kube-scheduler does not retry a pod on GPUNode or Lease
	// events for an extender, and a pod turned away for a missing
	// heartbeat keeps saying so until it is retried.
	var addr string
	if e.scheduler != nil {
		addr = e.scheduler.MetricsAddress
	} else {
		addr = e.extender.addr
	}
	want := fmt.Sprintf(`tessera_gpunode_heartbeat_timestamp_seconds{node="%s"}`, name)
	framework.WaitFor(t, 30*time.Second, "the scheduler to see node "+name+"'s heartbeat", func() (bool, string) {
		body, err := httpGet("http://" + addr + "/metrics/state")
		return err == nil && strings.Contains(body, want), ""
	})
	return gn.Status.Devices
}

// ctr is one container's GPU request; zero fields are not asked for.
type ctr struct {
	name                     string
	init, sidecar            bool
	count, memory, pct, core int64
}

// gpuPod builds a pod for the tessera-scheduler profile on the group's nodes.
func gpuPod(name, group string, annotations map[string]string, containers ...ctr) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Annotations: annotations},
		Spec: corev1.PodSpec{
			SchedulerName:                 schedulerName,
			NodeSelector:                  map[string]string{groupLabel: group},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
		},
	}
	names := gpurequest.DefaultResourceNames()
	for _, c := range containers {
		limits := corev1.ResourceList{}
		for rn, v := range map[corev1.ResourceName]int64{
			names.Count: c.count, names.Memory: c.memory, names.MemoryPercentage: c.pct, names.Cores: c.core,
		} {
			if v != 0 {
				limits[rn] = *resource.NewQuantity(v, resource.DecimalSI)
			}
		}
		container := corev1.Container{Name: c.name, Image: "registry.invalid/pause", Resources: corev1.ResourceRequirements{Limits: limits}}
		switch {
		case c.sidecar:
			container.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, container)
		case c.init:
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, container)
		default:
			pod.Spec.Containers = append(pod.Spec.Containers, container)
		}
	}
	return pod
}

func (e *env) createPod(ctx context.Context, t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	created, err := e.cp.Kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	return created
}

func (e *env) deletePod(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	err := e.cp.Kube.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil {
		t.Fatalf("deleting pod %s: %v", name, err)
	}
}

// waitBound waits until the pod is bound and its allocation is Allocated,
// and returns both.
func (e *env) waitBound(ctx context.Context, t *testing.T, name string) (*corev1.Pod, *gpuv1alpha1.GPUAllocation) {
	t.Helper()
	var pod *corev1.Pod
	var alloc *gpuv1alpha1.GPUAllocation
	framework.WaitFor(t, 60*time.Second, "pod "+name+" to be bound with its GPUs allocated", func() (bool, string) {
		var err error
		if pod, err = e.cp.Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		if pod.Spec.NodeName == "" {
			return false, "not bound; events: " + e.events(ctx, name)
		}
		if alloc, err = e.cp.Tessera.GpuV1alpha1().GPUAllocations(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		return alloc.Status.Phase == gpuv1alpha1.AllocationAllocated, "allocation phase " + string(alloc.Status.Phase)
	})
	if alloc.Spec.PodUID != pod.UID || alloc.Spec.NodeName != pod.Spec.NodeName {
		t.Fatalf("allocation of %s is for pod %s on %s; the pod is %s on %s", name, alloc.Spec.PodUID, alloc.Spec.NodeName, pod.UID, pod.Spec.NodeName)
	}
	return pod, alloc
}

// events returns the messages of the pod's events, oldest first.
func (e *env) events(ctx context.Context, pod string) string {
	list, err := e.cp.Kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, ev := range list.Items {
		out = append(out, ev.Reason+": "+ev.Message)
	}
	return strings.Join(out, " | ")
}

func httpGet(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}
