package dra

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// TestPlainGPUCountGetsWholeGPUsThroughTheExtendedResourceClass checks the
// chart's nvidia-gpu.tessera.dev class: a pod written for a device plugin
// (nvidia.com/gpu: 2, no claim) gets two whole GPUs of the driver on a DRA
// node, through the claim kube-scheduler makes for it; a second such pod
// waits, since a request that names no capacity takes a GPU's whole
// memory; and the claim goes with the pod.
func TestPlainGPUCountGetsWholeGPUsThroughTheExtendedResourceClass(t *testing.T) {
	c := startCluster(t, &simNode{name: "duo", gpus: twoH100})
	if _, err := c.cp.Kube.ResourceV1().DeviceClasses().Create(c.ctx, &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "nvidia-gpu.tessera.dev"},
		Spec: resourceapi.DeviceClassSpec{
			Selectors:            []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + gpuv1alpha1.DRADriverName + `"`}}},
			ExtendedResourceName: ptr.To("nvidia.com/gpu"),
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	countPod := func(name string, n int64) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "cuda", Image: "cuda",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(n, resource.DecimalSI)}},
			}}},
		}
	}
	pod := c.waitRunningCreated(countPod("whole", 2))
	if pod.Status.ExtendedResourceClaimStatus == nil {
		t.Fatal("the pod has no extended-resource claim")
	}
	env := strings.Join(c.containerEnv(pod)["cuda"], " ")
	for _, want := range []string{"CUDA_DEVICE_MEMORY_LIMIT_0=81920m", "CUDA_DEVICE_MEMORY_LIMIT_1=81920m"} {
		if !strings.Contains(env, want) {
			t.Errorf("container env %s lacks %s", env, want)
		}
	}
	if !strings.Contains(env, "NVIDIA_VISIBLE_DEVICES=GPU-duo-0,GPU-duo-1") && !strings.Contains(env, "NVIDIA_VISIBLE_DEVICES=GPU-duo-1,GPU-duo-0") {
		t.Errorf("container env %s does not show both GPUs", env)
	}

	c.createPod(countPod("waits", 1))
	c.waitUnschedulable("waits", "the second pod to be unschedulable")

	claim := pod.Status.ExtendedResourceClaimStatus.ResourceClaimName
	if err := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Delete(c.ctx, "whole", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitRunning("waits")
	framework.WaitFor(t, time.Minute, "the first pod's claim to go", func() (bool, string) {
		_, err := c.cp.Kube.ResourceV1().ResourceClaims(metav1.NamespaceDefault).Get(c.ctx, claim, metav1.GetOptions{})
		return err != nil, fmt.Sprintf("claim %s: %v", claim, err)
	})
}
