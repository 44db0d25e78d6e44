package dra

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// TestQuotaHoldsUnderTesseraScheduler runs tessera-scheduler with the
// shipped DRA configuration over one 80 GiB GPU and a ResourceQuota of
// 50000 MiB of GPU memory: a second 30 GiB claim, for which the GPU has
// room, waits Pending with the quota's reason, and runs once the quota is
// raised; a third waits in the same way, and runs once the first pod's
// claim is freed. The GPU never holds more than it has.
func TestQuotaHoldsUnderTesseraScheduler(t *testing.T) {
	c := startQuotaCluster(t)
	stop := c.watchCapacity()
	quotas := c.cp.Kube.CoreV1().ResourceQuotas(metav1.NamespaceDefault)
	c.claimTemplate("mem30", resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
		gpuRequest("gpu", 1, map[resourceapi.QualifiedName]string{gpuv1alpha1.DRACapacityMemory: "30Gi"}),
	}})
	c.waitRunningCreated(claimPod("p1", "solo", "mem30", map[string]string{"cuda": ""}))

	c.createPod(claimPod("p2", "solo", "mem30", map[string]string{"cuda": ""}))
	c.waitRefused("p2", "namespace default would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/memory (GPU memory in MiB): used 30720, asked 30720, limit 50000")
	// The quota controller writes the quota's status: patch, not update.
	patch := `{"spec":{"hard":{"requests.` + gpuv1alpha1.QuotaMemory + `":"70000"}}}`
	if _, err := quotas.Patch(c.ctx, "gpu", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitRunning("p2")

	c.createPod(claimPod("p3", "solo", "mem30", map[string]string{"cuda": ""}))
	c.waitRefused("p3", "namespace default would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/memory (GPU memory in MiB): used 61440, asked 30720, limit 70000")
	if err := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Delete(c.ctx, "p1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitRunning("p3")
	if violations := stop(); len(violations) > 0 {
		t.Errorf("the GPU held more than it has: %v", violations)
	}
}

// TestQuotaCountsClaimsBeingAllocated runs tessera-scheduler with the
// shipped DRA configuration over one 80 GiB GPU, which has room for two
// 30 GiB claims, and a ResourceQuota of 50000 MiB of GPU memory, which has
// room for one: of four pods whose claims exist when the pods are
// created, and which kube-scheduler therefore tries back to back, each
// while the claims placed before are still being written, one is placed
// and three wait on the quota.
func TestQuotaCountsClaimsBeingAllocated(t *testing.T) {
	c := startQuotaCluster(t)
	claims := c.cp.Kube.ResourceV1().ResourceClaims(metav1.NamespaceDefault)
	const pods = 4
	for i := range pods {
		name := fmt.Sprintf("mem30-%d", i)
		_, err := claims.Create(c.ctx, &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
				gpuRequest("gpu", 1, map[resourceapi.QualifiedName]string{gpuv1alpha1.DRACapacityMemory: "30Gi"}),
			}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range pods {
		pod := claimPod(fmt.Sprintf("p%d", i), "solo", "", map[string]string{"cuda": ""})
		pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimName: ptr.To(fmt.Sprintf("mem30-%d", i))}}
		c.createPod(pod)
	}
	var placed, overQuota int
	framework.WaitFor(t, time.Minute, "every pod placed or turned away", func() (bool, string) {
		list, err := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).List(c.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		placed, overQuota = 0, 0
		turnedAway := 0
		for _, pod := range list.Items {
			if pod.Spec.NodeName != "" {
				placed++
			}
			for _, cond := range pod.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Reason == corev1.PodReasonUnschedulable {
					turnedAway++
					if strings.Contains(cond.Message, "would exceed its GPU quota") {
						overQuota++
					}
				}
			}
		}
		return placed+turnedAway == pods, fmt.Sprintf("%d placed, %d turned away", placed, turnedAway)
	})
	if placed != 1 || overQuota != pods-1 {
		t.Errorf("%d pods placed and %d turned away by the quota, want 1 and %d: the quota has room for one", placed, overQuota, pods-1)
	}
	list, err := claims.List(c.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var allocated []string
	for _, claim := range list.Items {
		if claim.Status.Allocation != nil {
			allocated = append(allocated, claim.Name)
		}
	}
	if len(allocated) != 1 {
		t.Errorf("claims %v hold 30 GiB each, want one: the quota has room for one", allocated)
	}
}

// startQuotaCluster starts tessera-scheduler with the shipped DRA
// configuration over node "solo", one 80 GiB GPU, with ResourceQuota "gpu"
// of 50000 MiB of GPU memory in the default namespace.
func startQuotaCluster(t *testing.T) *cluster {
	t.Helper()
	c := startTesseraScheduler(t, &simNode{name: "solo", gpus: oneH100})
	_, err := c.cp.Kube.CoreV1().ResourceQuotas(metav1.NamespaceDefault).Create(c.ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests." + gpuv1alpha1.QuotaMemory: resource.MustParse("50000")}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startTesseraScheduler starts the nodes and tessera-scheduler with the
// shipped DRA configuration.
func startTesseraScheduler(t *testing.T, nodes ...*simNode) *cluster {
	t.Helper()
	bin, err := framework.SchedulerPluginBinary()
	if err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "deploy", "scheduler", "tessera-scheduler-dra-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var scheduler *framework.Process
	c := startClusterWith(t, func(cp *framework.ControlPlane) { scheduler = cp.StartSchedulerBinary(t, bin, string(config)) }, nodes...)
	c.restartScheduler = func() {
		scheduler.Stop()
		scheduler = c.cp.StartSchedulerBinary(t, bin, string(config))
	}
	return c
}

// waitRefused waits until the scheduler finds the pod unschedulable with
// a reason that contains want.
func (c *cluster) waitRefused(name, want string) {
	c.t.Helper()
	framework.WaitFor(c.t, time.Minute, "pod "+name+" to be turned away saying "+want, func() (bool, string) {
		pod, err := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Get(c.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Reason == corev1.PodReasonUnschedulable {
				return strings.Contains(cond.Message, want), cond.Message
			}
		}
		return false, "node " + pod.Spec.NodeName
	})
}
