package main

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// checkVolumeBinds creates a PersistentVolume, a claim that asks for it
// and a pod that mounts the claim, as a workload tried on local-up would:
// the claim must be bound and the pod run.
func checkVolumeBinds(ctx context.Context, t *testing.T, kube kubernetes.Interface) {
	t.Helper()
	const class = "local-up-manual"
	size := resource.MustParse("1Gi")
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              class,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/data"}},
		},
	}
	if _, err := kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: demoNamespace},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: new(class),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	if _, err := kube.CoreV1().PersistentVolumeClaims(demoNamespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "uses-a-volume", Namespace: demoNamespace},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36",
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
		},
	}
	if _, err := kube.CoreV1().Pods(demoNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var claimPhase corev1.PersistentVolumeClaimPhase
	var podPhase corev1.PodPhase
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if c, err := kube.CoreV1().PersistentVolumeClaims(demoNamespace).Get(ctx, claim.Name, metav1.GetOptions{}); err == nil {
			claimPhase = c.Status.Phase
		}
		if p, err := kube.CoreV1().Pods(demoNamespace).Get(ctx, pod.Name, metav1.GetOptions{}); err == nil {
			podPhase = p.Status.Phase
		}
		return claimPhase == corev1.ClaimBound && podPhase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("a pod that mounts a PersistentVolumeClaim did not run within a minute: the claim is %q, the pod %q", claimPhase, podPhase)
	}
}
