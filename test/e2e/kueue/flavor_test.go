package kueue

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/options"
	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/webhook/admission"
)

// pinnedQueue is a ClusterQueue with the gang-fit check whose one
// ResourceFlavor puts its pods on the nodes labelled pool=a.
const pinnedQueue = `
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: pool-a
spec:
  nodeLabels:
    pool: a
---
apiVersion: v1
kind: Namespace
metadata:
  name: pinned
  labels:
    kueue-managed: "true"
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: pinned
spec:
  namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: pinned
  admissionChecksStrategy:
    admissionChecks:
      - name: tessera-gang-fit
  resourceGroups:
    - coveredResources: [cpu, memory, gpu.tessera.dev/gpus, gpu.tessera.dev/memory, gpu.tessera.dev/cores]
      flavors:
        - name: pool-a
          resources:
            - {name: cpu, nominalQuota: "32"}
            - {name: memory, nominalQuota: 128Gi}
            - {name: gpu.tessera.dev/gpus, nominalQuota: "8"}
            - {name: gpu.tessera.dev/memory, nominalQuota: "400000"}
            - {name: gpu.tessera.dev/cores, nominalQuota: "800"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: default
  namespace: pinned
spec:
  clusterQueue: pinned
`

// TestGangFitHoldsWhereTheFlavorRuns runs the gang-fit check for a
// ClusterQueue whose ResourceFlavor puts its pods on the nodes labelled
// pool=a, on two nodes of one A100: pool-a's, with 10,000 MiB free, and an
// empty one outside the pool. A Job of 40,000 MiB fits only the empty
// node, where Kueue would never start its pod: the check sends it back
// rather than holding room there. Once pool-a's GPU frees, the Job is
// admitted and its pod runs there. A second Job, of 50,000 MiB, fits
// pool-a no more and is sent back; once the empty node joins the pool
// (labelled pool=a), it is admitted and runs there. Kueue would try the
// Jobs again only after 10 minutes: each is admitted on the event.
func TestGangFitHoldsWhereTheFlavorRuns(t *testing.T) {
	ctx := context.Background()
	e := startEnvWith(t, func(c *options.Config) {
		c.GangFit.Enabled = true
		c.GangFit.RetryAfter.Duration = 10 * time.Minute
	})
	examples := filepath.Join(framework.RepoRoot(), "deploy", "examples", "kueue")
	manifest := filepath.Join(t.TempDir(), "pinned.yaml")
	if err := os.WriteFile(manifest, []byte(pinnedQueue), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := framework.ApplyManifests(ctx, e.cp.Config, filepath.Join(examples, "gang-fit.yaml"), manifest); err != nil {
		t.Fatalf("applying the pinned queue: %v", err)
	}
	e.addNode(ctx, t, "pool-a", 1)
	e.addNode(ctx, t, "elsewhere", 1)
	joinPoolA(ctx, t, e, "pool-a")
	fragment := framework.CreateBoundPod(ctx, t, e.cp, "pool-a", &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "fragment"},
		Spec:       corev1.PodSpec{SchedulerName: admission.DefaultSchedulerName, Containers: []corev1.Container{{Name: "main", Image: "registry.example/x:1"}}},
	}, gpuv1alpha1.ContainerAllocation{
		Name: "main", Kind: gpuv1alpha1.ContainerApp,
		Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-pool-a-0", MemoryMiB: 71920, Cores: 10}},
	})

	job := e.submit(ctx, t, gpuJob("pinned", "pinned", 1, slice{gpus: 1, memoryMiB: 40000, cores: 10}))
	framework.WaitFor(t, time.Minute, "the check to send Job pinned back", func() (bool, string) {
		state, message := e.gangFitState(ctx, t, job)
		return state == "Retry" && strings.Contains(message, "fits no node's GPUs as they are now"), state + ": " + message
	})
	e.waitSuspendedWithoutPods(ctx, t, job)

	if err := e.cp.Kube.CoreV1().Pods(fragment.Namespace).Delete(ctx, fragment.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	e.waitAdmitted(t, job, "pinned")
	e.waitPlaced(ctx, t, job, "pool-a", 1)

	second := e.submit(ctx, t, gpuJob("pinned", "pinned-2", 1, slice{gpus: 1, memoryMiB: 50000, cores: 10}))
	framework.WaitFor(t, time.Minute, "the check to send Job pinned-2 back", func() (bool, string) {
		state, message := e.gangFitState(ctx, t, second)
		return state == "Retry", state + ": " + message
	})
	joinPoolA(ctx, t, e, "elsewhere")
	e.waitAdmitted(t, second, "pinned")
	e.waitPlaced(ctx, t, second, "elsewhere", 1)
	e.cp.CheckGPUAccounting(ctx, t, admission.DefaultSchedulerName)
}

// joinPoolA labels the node pool=a, the label of the pinned queue's flavor.
func joinPoolA(ctx context.Context, t *testing.T, e *env, name string) {
	t.Helper()
	node, err := e.cp.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Labels["pool"] = "a"
	if _, err := e.cp.Kube.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
