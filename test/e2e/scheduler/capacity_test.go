package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tessera-gpu/tessera/test/framework"
)

// testCapacity checks that a pod that does not fit stays Pending with a
// FailedScheduling event that says why, and is scheduled as soon as a pod
// in its way is deleted.
func testCapacity(ctx context.Context, t *testing.T, e *env) {
	const group = "capacity"
	e.addNode(ctx, t, "capacity-1", group, 10, t4())

	t.Run("a pod no GPU can ever fit says why", func(t *testing.T) {
		e.createPod(ctx, t, gpuPod("cap-huge", group, nil, ctr{name: "main", count: 1, memory: 20000}))
		e.waitFailedScheduling(ctx, t, "cap-huge", "1 node(s) had 0/1 GPUs that fit (1 not enough memory)")
		e.deletePod(ctx, t, "cap-huge")
	})

	t.Run("a pod whose selected GPUs no node holds says so", func(t *testing.T) {
		// In HAMi's words; DRA mode says the same (test/e2e/dra's reasons test).
		nowhere := map[string]string{"nvidia.com/use-gpuuuid": "GPU-nowhere"}
		e.createPod(ctx, t, gpuPod("cap-nowhere", group, nowhere, ctr{name: "main", count: 1, memory: 1000}))
		e.waitFailedScheduling(ctx, t, "cap-nowhere", "1 node(s) had none of the pod's selected GPUs")
		e.deletePod(ctx, t, "cap-nowhere")
	})

	t.Run("a pod waits for capacity and gets it once freed", func(t *testing.T) {
		half := ctr{name: "main", count: 1, memory: 10000}
		e.createPod(ctx, t, gpuPod("cap-first", group, nil, half))
		e.waitBound(ctx, t, "cap-first")
		e.createPod(ctx, t, gpuPod("cap-second", group, nil, half))
		e.waitFailedScheduling(ctx, t, "cap-second", "not enough memory")

		freed := time.Now()
		e.deletePod(ctx, t, "cap-first")
		pod, _ := e.waitBound(ctx, t, "cap-second")
		// kube-scheduler's fallback retry of unschedulable pods is 5 minutes;
		// waitBound's deadline of 60s shows the pod was retried on the event.
		t.Logf("pod scheduled %s after the pod in its way was deleted", time.Since(freed).Round(time.Millisecond))
		if pod.Spec.NodeName != "capacity-1" {
			t.Errorf("pod went to %s", pod.Spec.NodeName)
		}
		e.deletePod(ctx, t, "cap-second")
	})

	t.Run("a pod pinned to a GPU held by another pod is told which GPU and why", func(t *testing.T) {
		e.createPod(ctx, t, gpuPod("cap-whole", group, nil, ctr{name: "main", count: 1}))
		_, alloc := e.waitBound(ctx, t, "cap-whole")
		uuid := alloc.Spec.Containers[0].Devices[0].UUID
		pinned := map[string]string{"tessera.dev/gpu-uuid": uuid}
		e.createPod(ctx, t, gpuPod("cap-pinned", group, pinned, ctr{name: "main", count: 1, memory: 1000}))
		e.waitFailedScheduling(ctx, t, "cap-pinned",
			"1 node(s) had 0/1 of the pod's selected GPUs that fit ("+uuid+", index 0: held whole by another pod)")
		e.deletePod(ctx, t, "cap-whole")
		e.waitBound(ctx, t, "cap-pinned")
		e.deletePod(ctx, t, "cap-pinned")
	})

	t.Run("a finished pod frees its GPUs at once", func(t *testing.T) {
		big := ctr{name: "main", count: 1, memory: 12000}
		e.createPod(ctx, t, gpuPod("cap-job", group, nil, big))
		job, _ := e.waitBound(ctx, t, "cap-job")
		e.createPod(ctx, t, gpuPod("cap-next", group, nil, big))
		e.waitFailedScheduling(ctx, t, "cap-next", "not enough memory")

		job.Status.Phase = corev1.PodSucceeded
		if _, err := e.cp.Kube.CoreV1().Pods(namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.waitBound(ctx, t, "cap-next")
		e.deletePod(ctx, t, "cap-job")
		e.deletePod(ctx, t, "cap-next")
	})
}

// waitFailedScheduling waits for the pod's FailedScheduling event with the
// given words, and checks the pod is still not bound.
func (e *env) waitFailedScheduling(ctx context.Context, t *testing.T, pod, words string) {
	t.Helper()
	framework.WaitFor(t, 60*time.Second, "a FailedScheduling event for "+pod+" saying "+words, func() (bool, string) {
		list, err := e.cp.Kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
		if err != nil {
			return false, err.Error()
		}
		for _, ev := range list.Items {
			if ev.Reason == "FailedScheduling" && strings.Contains(ev.Message, words) {
				t.Logf("event: %s", ev.Message)
				return true, ""
			}
		}
		return false, e.events(ctx, pod)
	})
	p, err := e.cp.Kube.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending {
		t.Fatalf("pod %s is on %q in phase %s, want it Pending and unbound", pod, p.Spec.NodeName, p.Status.Phase)
	}
}
