package scheduler

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tessera-gpu/tessera/gpurequest"
)

// TestMIGByNVIDIAName runs, behind the admission webhook in each mode,
// pods written for the NVIDIA device plugin's mixed strategy, as HAMi's
// MIG example is: a pod asking for nvidia.com/mig-3g.20gb: 1 is placed on
// the node whose GPU has that instance and gets exactly it, whole; a pod
// asking for a profile no GPU is is told so, naming the resource it
// wrote, in its FailedScheduling event; and one asking for what Tessera
// cannot serve is refused at creation, naming the resource. A pod in
// HAMi's MIG mode gets the smallest instance that holds its memory,
// whole, and is refused two GPUs, as in DRA mode.
func TestMIGByNVIDIAName(t *testing.T) {
	inBothModes(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		e.cp.StartWebhook(t, nil)
		const group = "mig"
		e.addNode(ctx, t, "whole-1", group, 10, a100(0))
		instances := e.addNode(ctx, t, "mig-1", group, 1, migInstance("1g.5gb", 4864), migInstance("3g.20gb", 19968), migInstance("1g.5gb", 4864))

		e.createPod(ctx, t, nvidiaMIGPod("mig-3g", group, "nvidia.com/mig-3g.20gb", "1"))
		pod, alloc := e.waitBound(ctx, t, "mig-3g")
		if pod.Spec.NodeName != "mig-1" {
			t.Errorf("the pod runs on %s, want mig-1", pod.Spec.NodeName)
		}
		got := alloc.Spec.Containers
		if len(got) != 1 || len(got[0].Devices) != 1 || got[0].Devices[0].UUID != instances[1].UUID || got[0].Devices[0].MemoryMiB != 19968 {
			t.Errorf("allocation %+v, want the 3g.20gb instance %s whole", got, instances[1].UUID)
		}
		limits := pod.Spec.Containers[0].Resources.Limits
		if _, ok := limits["nvidia.com/mig-3g.20gb"]; ok || limits.Name(gpurequest.DefaultResourceNames().Count, resource.DecimalSI).Value() != 1 ||
			pod.Annotations[gpurequest.AnnotationMIGProfile] != "3g.20gb" || pod.Spec.SchedulerName != schedulerName {
			t.Errorf("the webhook left limits %v, annotations %v, scheduler %q", limits, pod.Annotations, pod.Spec.SchedulerName)
		}

		// The one 3g.20gb instance is taken; 2g.10gb no GPU is.
		e.createPod(ctx, t, nvidiaMIGPod("mig-3g-second", group, "nvidia.com/mig-3g.20gb", "1"))
		e.waitFailedScheduling(ctx, t, "mig-3g-second", "in use, exclusive use asked")
		e.createPod(ctx, t, nvidiaMIGPod("mig-2g", group, "nvidia.com/mig-2g.10gb", "1"))
		e.waitFailedScheduling(ctx, t, "mig-2g", "not a nvidia.com/mig-2g.10gb instance")

		for _, tc := range []struct {
			name, resource, quantity, want string
		}{
			{"mig-two", "nvidia.com/mig-1g.5gb", "2", "spec.containers[0].resources.limits[nvidia.com/mig-1g.5gb]: Invalid value: \"2\": must be at most 1"},
			{"mig-unknown", "nvidia.com/mig-large", "1", "spec.containers[0].resources.limits[nvidia.com/mig-large]: Invalid value: \"1\": names no MIG profile"},
		} {
			_, err := e.cp.Kube.CoreV1().Pods(namespace).Create(ctx, nvidiaMIGPod(tc.name, group, tc.resource, tc.quantity), metav1.CreateOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("creating a pod asking for %s: %s: %v, want a refusal saying %q", tc.resource, tc.quantity, err, tc.want)
			}
		}

		// HAMi's dynamic MIG example asks for MIG by memory: one GPU gets
		// the smallest instance that holds it, whole; two are refused, as
		// in DRA mode.
		hamiMIG := map[string]string{"nvidia.com/vgpu-mode": "mig"}
		e.createPod(ctx, t, gpuPod("mig-by-memory", group, hamiMIG, ctr{name: "cuda", count: 1, memory: 4000}))
		if _, alloc := e.waitBound(ctx, t, "mig-by-memory"); alloc.Spec.Containers[0].Devices[0].UUID != instances[0].UUID ||
			alloc.Spec.Containers[0].Devices[0].MemoryMiB != 4864 {
			t.Errorf("the pod asking for 4000 MiB in MIG mode got %+v, want the 1g.5gb instance %s whole", alloc.Spec.Containers[0].Devices, instances[0].UUID)
		}
		_, err := e.cp.Kube.CoreV1().Pods(namespace).Create(ctx, gpuPod("mig-two-by-memory", group, hamiMIG, ctr{name: "cuda", count: 2, memory: 8000}), metav1.CreateOptions{})
		if want := "spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: 2: must be 1, since the pod asks for MIG instances only (nvidia.com/vgpu-mode)"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("creating HAMi's dynamic MIG example: %v, want a refusal saying %q", err, want)
		}

		// Freed, the instance goes to the pod that waited for it.
		e.deletePod(ctx, t, "mig-3g")
		_, alloc = e.waitBound(ctx, t, "mig-3g-second")
		if uuid := alloc.Spec.Containers[0].Devices[0].UUID; uuid != instances[1].UUID {
			t.Errorf("the second pod got %s, want the freed instance %s", uuid, instances[1].UUID)
		}
	})
}

// nvidiaMIGPod is a pod as written for the NVIDIA device plugin's mixed
// strategy: one container asking for a MIG resource, no scheduler named.
func nvidiaMIGPod(name, group, res, quantity string) *corev1.Pod {
	pod := gpuPod(name, group, nil)
	pod.Spec.SchedulerName = ""
	pod.Spec.Containers = []corev1.Container{{Name: "cuda", Image: "registry.invalid/cuda", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceName(res): resource.MustParse(quantity)},
	}}}
	return pod
}
