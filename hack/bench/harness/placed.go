package harness

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

// PlacePods creates o.Pods pods already bound to nodes, each with the
// GPUAllocation the extender would have written, marked Allocated, or in
// FormClaim with its claim allocated and reserved for it, as
// kube-scheduler would have left it.
func PlacePods(ctx context.Context, env *ClusterEnv, o *Options, form PodForm) error {
	shapes, placements, err := ScalePlacements(o.Nodes, o.GPUsPerNode, o.Split, o.Pods)
	if err != nil {
		return err
	}
	start := time.Now()
	err = ForEach(ctx, o.Pods, o.Workers, func(ctx context.Context, i int) error {
		pod := NewPod(PodName(i), env.SchedulerName, shapes[i], form)
		pod.Spec.NodeName = NodeName(placements[i].Node)
		if form == FormClaim {
			return CreateAllocatedClaimPod(ctx, env, pod, shapes[i], placements[i].Devices)
		}
		return CreateAllocatedPod(ctx, env, pod, placements[i].Devices)
	})
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Placed pods with their allocations", "pods", o.Pods, "claims", form == FormClaim, "duration", time.Since(start).Round(time.Second))
	return nil
}

// ScalePlacement is where the placer put one of scale mode's pods: the
// node's index and the devices its container got.
type ScalePlacement struct {
	Node    int
	Devices []gpuv1alpha1.DeviceAllocation
}

// ScalePlacements are the shapes of scale mode's pods, in the workload's
// mix, and where the placer's first fit puts each.
func ScalePlacements(nodes, gpusPerNode, split, pods int) ([]Shape, []ScalePlacement, error) {
	shapes := DefaultMix().Sequence(pods)
	p := NewPlacer(nodes, gpusPerNode, split)
	placements := make([]ScalePlacement, pods)
	for i, s := range shapes {
		node, devices, err := p.Place(i, s)
		if err != nil {
			return nil, nil, err
		}
		placements[i] = ScalePlacement{node, devices}
	}
	return shapes, placements, nil
}

// CreateAllocatedPod creates a pod already bound to its node, with the
// GPUAllocation the extender would have written for its devices, marked
// Allocated as the device plugin would.
func CreateAllocatedPod(ctx context.Context, env *ClusterEnv, pod *corev1.Pod, devices []gpuv1alpha1.DeviceAllocation) error {
	created, err := env.ControlPlane.Kube.CoreV1().Pods(Namespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return fmt.Errorf("creating pod %s: %w", pod.Name, err)
	}
	alloc, err := env.ControlPlane.Tessera.GpuV1alpha1().GPUAllocations(Namespace).Create(ctx,
		AllocationFor(created, devices), metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return fmt.Errorf("creating the allocation of pod %s: %w", pod.Name, err)
	}
	alloc.Status = AllocatedStatus(alloc, metav1.Now())
	if _, err := env.ControlPlane.Tessera.GpuV1alpha1().GPUAllocations(Namespace).UpdateStatus(ctx, alloc,
		metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("marking the allocation of pod %s Allocated: %w", pod.Name, err)
	}
	return nil
}

// AllocationFor is the GPUAllocation the extender writes for a bound pod
// whose one container got devices.
func AllocationFor(pod *corev1.Pod, devices []gpuv1alpha1.DeviceAllocation) *gpuv1alpha1.GPUAllocation {
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

// CreateAllocatedClaimPod creates a pod already bound to its node, and its
// claim allocated there on the devices and reserved for the pod, as
// kube-scheduler would have left them.
func CreateAllocatedClaimPod(ctx context.Context, env *ClusterEnv, pod *corev1.Pod, s Shape, devices []gpuv1alpha1.DeviceAllocation) error {
	created, err := env.ControlPlane.Kube.CoreV1().Pods(Namespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return fmt.Errorf("creating pod %s: %w", pod.Name, err)
	}
	claims := env.ControlPlane.Kube.ResourceV1().ResourceClaims(Namespace)
	claim, err := claims.Create(ctx, ResourceClaim(pod.Name, s), metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return fmt.Errorf("creating claim %s: %w", pod.Name, err)
	}
	claim.Status.Allocation = ClaimAllocation(pod.Spec.NodeName, devices)
	claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: created.Name, UID: created.UID}}
	if _, err := claims.UpdateStatus(ctx, claim, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("allocating claim %s: %w", pod.Name, err)
	}
	return nil
}
