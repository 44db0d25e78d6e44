package main

import (
	"context"
	"fmt"
	"time"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// placePods creates o.Pods pods already bound to nodes, each with the
// GPUAllocation the extender would have written, marked Allocated, or in
// formClaim with its claim allocated and reserved for it, as
// kube-scheduler would have left it.
func placePods(ctx context.Context, env *clusterEnv, o *Options, form podForm) error {
	shapes, placements, err := scalePlacements(o.Nodes, o.GPUsPerNode, o.Split, o.Pods)
	if err != nil {
		return err
	}
	start := time.Now()
	err = forEach(ctx, o.Pods, o.Workers, func(ctx context.Context, i int) error {
		pod := newPod(podName(i), env.schedulerName, shapes[i], form)
		pod.Spec.NodeName = nodeName(placements[i].node)
		if form == formClaim {
			return createAllocatedClaimPod(ctx, env, pod, shapes[i], placements[i].devices)
		}
		return createAllocatedPod(ctx, env, pod, placements[i].devices)
	})
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Placed pods with their allocations", "pods", o.Pods, "claims", form == formClaim, "duration", time.Since(start).Round(time.Second))
	return nil
}

// scalePlacement is where the placer put one of scale mode's pods: the
// node's index and the devices its container got.
type scalePlacement struct {
	node    int
	devices []gpuv1alpha1.DeviceAllocation
}

// scalePlacements are the shapes of scale mode's pods, in the workload's
// mix, and where the placer's first fit puts each.
func scalePlacements(nodes, gpusPerNode, split, pods int) ([]Shape, []scalePlacement, error) {
	shapes := DefaultMix().Sequence(pods)
	p := newPlacer(nodes, gpusPerNode, split)
	placements := make([]scalePlacement, pods)
	for i, s := range shapes {
		node, devices, err := p.place(i, s)
		if err != nil {
			return nil, nil, err
		}
		placements[i] = scalePlacement{node, devices}
	}
	return shapes, placements, nil
}

// createAllocatedPod creates a pod already bound to its node, with the
// GPUAllocation the extender would have written for its devices, marked
// Allocated as the device plugin would.
func createAllocatedPod(ctx context.Context, env *clusterEnv, pod *corev1.Pod, devices []gpuv1alpha1.DeviceAllocation) error {
	created, err := env.cp.Kube.CoreV1().Pods(benchNamespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil {
		return fmt.Errorf("creating pod %s: %w", pod.Name, err)
	}
	alloc, err := env.cp.Tessera.GpuV1alpha1().GPUAllocations(benchNamespace).Create(ctx,
		allocationFor(created, devices), metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil {
		return fmt.Errorf("creating the allocation of pod %s: %w", pod.Name, err)
	}
	alloc.Status = allocatedStatus(alloc, metav1.Now())
	if _, err := env.cp.Tessera.GpuV1alpha1().GPUAllocations(benchNamespace).UpdateStatus(ctx, alloc,
		metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		return fmt.Errorf("marking the allocation of pod %s Allocated: %w", pod.Name, err)
	}
	return nil
}

// allocationFor is the GPUAllocation the extender writes for a bound pod
// whose one container got devices.
func allocationFor(pod *corev1.Pod, devices []gpuv1alpha1.DeviceAllocation) *gpuv1alpha1.GPUAllocation {
	var memory int64
	for _, d := range devices {
		memory += d.MemoryMiB
	}
	return &gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Name, Namespace: pod.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pod, corev1.SchemeGroupVersion.WithKind("Pod"))},
		},
		Spec: gpuv1alpha1.GPUAllocationSpec{
			PodUID:   pod.UID,
			NodeName: pod.Spec.NodeName,
			Containers: []gpuv1alpha1.ContainerAllocation{{
				Name: pod.Spec.Containers[0].Name, Kind: gpuv1alpha1.ContainerApp, Devices: devices,
			}},
			GPUCount:  int32(len(devices)),
			MemoryMiB: memory,
		},
	}
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
