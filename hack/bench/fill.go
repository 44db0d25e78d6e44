package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// fillCluster places pods on the view until no shape of its mix fits any
// node (backlogView.fill), and creates them already running where they
// were placed, named from the first pod on, as the row's scheduler would
// have left them: with their Allocated GPUAllocations, or in formClaim
// their allocated claims.
func fillCluster(ctx context.Context, env *clusterEnv, view *backlogView, form podForm, workers int) ([]filledPod, error) {
	filled := view.fill()
	start := time.Now()
	err := forEach(ctx, len(filled), workers, func(ctx context.Context, i int) error {
		f := filled[i]
		pod := newPod(podName(i), env.schedulerName, view.mix[f.shape], form)
		pod.Spec.NodeName = f.node
		if form == formClaim {
			return createAllocatedClaimPod(ctx, env, pod, view.mix[f.shape], f.containers[0].Devices)
		}
		return createAllocatedPod(ctx, env, pod, f.containers[0].Devices)
	})
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).Info("Filled the cluster", "pods", len(filled), "duration", time.Since(start).Round(time.Second))
	return filled, nil
}

// createAllocatedClaimPod creates a pod already bound to its node, and its
// claim allocated there on the devices and reserved for the pod, as
// kube-scheduler would have left them.
func createAllocatedClaimPod(ctx context.Context, env *clusterEnv, pod *corev1.Pod, s Shape, devices []gpuv1alpha1.DeviceAllocation) error {
	created, err := env.cp.Kube.CoreV1().Pods(benchNamespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil {
		return fmt.Errorf("creating pod %s: %w", pod.Name, err)
	}
	claims := env.cp.Kube.ResourceV1().ResourceClaims(benchNamespace)
	claim, err := claims.Create(ctx, resourceClaim(pod.Name, s), metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil {
		return fmt.Errorf("creating claim %s: %w", pod.Name, err)
	}
	claim.Status.Allocation = claimAllocation(pod.Spec.NodeName, devices)
	claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: created.Name, UID: created.UID}}
	if _, err := claims.UpdateStatus(ctx, claim, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		return fmt.Errorf("allocating claim %s: %w", pod.Name, err)
	}
	return nil
}
