package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	"github.com/tessera-gpu/tessera/test/framework"
)

// checkColumns checks what kubectl get shows about the placed examples:
// each GPUNode's free memory is its allocatable memory less what the
// allocations on it hold, and each GPUAllocation names its GPUs' indexes.
func checkColumns(ctx context.Context, t *testing.T, kube kubernetes.Interface, tessera versioned.Interface, placed map[string]*gpuv1alpha1.GPUAllocation) {
	t.Helper()
	held := map[string]int64{}
	for name, a := range placed {
		var indexes []int
		for _, c := range a.Spec.Containers {
			for _, d := range c.Devices {
				held[a.Spec.NodeName] += d.MemoryMiB
				if !slices.Contains(indexes, int(d.Index)) {
					indexes = append(indexes, int(d.Index))
				}
			}
		}
		slices.Sort(indexes)
		var want []string
		for _, i := range indexes {
			want = append(want, strconv.Itoa(i))
		}
		row := framework.GetTableRow(ctx, t, kube, "/apis/gpu.tessera.dev/v1alpha1/namespaces/"+demoNamespace+"/gpuallocations/"+name)
		if row["GPUs"] != strings.Join(want, ",") {
			t.Errorf("kubectl get gpuallocations shows GPUs %v for %s, want %q", row["GPUs"], name, strings.Join(want, ","))
		}
	}
	nodes, err := tessera.GpuV1alpha1().GPUNodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, gn := range nodes.Items {
		want := float64(gn.Status.AllocatableMemoryMiB - held[gn.Name])
		var row map[string]any
		// The extender publishes free memory every few seconds.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			if row = framework.GetTableRow(ctx, t, kube, "/apis/gpu.tessera.dev/v1alpha1/gpunodes/"+gn.Name); row["Free(MiB)"] == want || time.Now().After(deadline) {
				break
			}
		}
		if row["Free(MiB)"] != want {
			t.Errorf("kubectl get gpunodes shows %v MiB free on %s, want %v (row %v)", row["Free(MiB)"], gn.Name, want, row)
		}
	}
}

// checkPinnedReason creates a pod pinned to the GPU that the whole-gpu
// example holds, and checks that its FailedScheduling event names the GPU
// and says why the pod cannot have it.
func checkPinnedReason(ctx context.Context, t *testing.T, kube kubernetes.Interface, placed map[string]*gpuv1alpha1.GPUAllocation) {
	t.Helper()
	gpu := placed["whole-gpu"].Spec.Containers[0].Devices[0]
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pinned", Namespace: demoNamespace,
			Annotations: map[string]string{"tessera.dev/gpu-uuid": gpu.UUID}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "cuda", Image: "registry.invalid/cuda", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), "nvidia.com/gpumem": resource.MustParse("1000")},
			}}},
		},
	}
	if _, err := kube.CoreV1().Pods(demoNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = kube.CoreV1().Pods(demoNamespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	}()
	want := fmt.Sprintf("1 node(s) had 0/1 of the pod's selected GPUs that fit (%s, index %d: held whole by another pod)", gpu.UUID, gpu.Index)
	var seen []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		events, err := kube.CoreV1().Events(demoNamespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod.Name})
		if err != nil {
			t.Fatal(err)
		}
		seen = seen[:0]
		for _, ev := range events.Items {
			if ev.Reason == "FailedScheduling" && strings.Contains(ev.Message, want) {
				t.Logf("event: %s", ev.Message)
				return
			}
			seen = append(seen, ev.Reason+": "+ev.Message)
		}
	}
	t.Errorf("no FailedScheduling event for the pinned pod saying %q; events: %v", want, seen)
}
