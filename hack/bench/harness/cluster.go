package harness

import (
	"context"
	"fmt"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/test/framework"
)

// The simulated GPU: an 80 GiB A100, as a device plugin without memory or
// core scaling reports it.
const (
	gpuModel     = "NVIDIA A100-SXM4-80GB"
	GPUMemoryMiB = 81920
	GPUCores     = 100
)

// FieldManager names the bench's writes.
const FieldManager = "tessera-bench"

// NodeName is the name of the i-th node, also its GPUNode's.
func NodeName(i int) string { return fmt.Sprintf("bench-node-%05d", i) }

// GPUUUID is the UUID of a node's index-th GPU.
func GPUUUID(node string, index int) string { return "GPU-" + node + "-" + strconv.Itoa(index) }

// GPUNodeStatus is the status a device plugin publishes for a node with
// gpus healthy, unscaled GPUs, each shared by at most split containers.
func GPUNodeStatus(node string, gpus, split int, now metav1.Time) gpuv1alpha1.GPUNodeStatus {
	devices := make([]gpuv1alpha1.GPUDevice, gpus)
	for i := range devices {
		devices[i] = gpuv1alpha1.GPUDevice{
			UUID:       GPUUUID(node, i),
			Index:      int32(i),
			Model:      gpuModel,
			MemoryMiB:  GPUMemoryMiB,
			Cores:      GPUCores,
			ShareLimit: int32(split),
			// Two NUMA nodes, half the GPUs on each, as on a DGX.
			NUMANode: int32(i * 2 / gpus),
			Health:   gpuv1alpha1.GPUHealthy,
		}
	}
	return gpuv1alpha1.GPUNodeStatus{
		Devices:              devices,
		DriverVersion:        "simulated",
		GPUCount:             int32(gpus),
		Models:               gpuModel,
		MemoryMiB:            int64(gpus) * GPUMemoryMiB,
		AllocatableMemoryMiB: int64(gpus) * GPUMemoryMiB,
		Conditions: []metav1.Condition{{
			Type: gpuv1alpha1.GPUNodeReady, Status: metav1.ConditionTrue, Reason: "PluginServing",
			Message: "simulated by the benchmark", LastTransitionTime: now,
		}},
	}
}

// CreateNodes creates the cluster's Nodes. For the device plugin's forms
// each has allocatable nvidia.com/gpu = GPUs × split as HAMi-style device
// plugins advertise it, its GPUNode through the generated clientset, and
// its Lease, renewed now, in the namespace the extender watches by
// default. In formClaim a Node advertises no GPUs: its ResourceSlice, as
// Tessera's node daemon publishes it in DRA mode, offers them.
func CreateNodes(ctx context.Context, env *ClusterEnv, o *Options, form PodForm) error {
	logger := klog.FromContext(ctx)
	allocatable := corev1.ResourceList{
		gpurequest.DefaultResourceNames().Count: *resource.NewQuantity(int64(o.GPUsPerNode*o.Split), resource.DecimalSI),
	}
	if form == FormClaim {
		allocatable = nil
	}
	err := ForEach(ctx, o.Nodes, o.Workers, func(ctx context.Context, i int) error {
		name := NodeName(i)
		node, err := framework.NewReadyNode(ctx, env.ControlPlane.Kube, name, allocatable)
		if err != nil {
			return fmt.Errorf("creating node %s: %w", name, err)
		}
		status := GPUNodeStatus(name, o.GPUsPerNode, o.Split, metav1.Now())
		status.PodIdentification = o.PodIdentification
		if form == FormClaim {
			// Owned by its Node, as the node daemon's ResourceSlice
			// controller publishes it, which then keeps it as it is.
			slice := ResourceSlice(name, status.Devices)
			slice.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: node.UID, Controller: ptr.To(true)}}
			if _, err := env.ControlPlane.Kube.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
				return fmt.Errorf("publishing the ResourceSlice of node %s: %w", name, err)
			}
			return createLease(ctx, env, name)
		}
		gpuNodes := env.ControlPlane.Tessera.GpuV1alpha1().GPUNodes()
		gn, err := gpuNodes.Create(ctx, &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}},
			metav1.CreateOptions{FieldManager: FieldManager})
		if err != nil {
			return fmt.Errorf("creating GPUNode %s: %w", name, err)
		}
		gn.Status = status
		if _, err := gpuNodes.UpdateStatus(ctx, gn, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("publishing the status of GPUNode %s: %w", name, err)
		}
		return createLease(ctx, env, name)
	})
	if err != nil {
		return err
	}
	logger.Info("Created nodes", "nodes", o.Nodes, "gpusPerNode", o.GPUsPerNode, "split", o.Split, "resourceSlices", form == FormClaim)
	return nil
}

// createLease creates the node's Lease, renewed now, in the namespace the
// extender watches by default: a running fleet's node daemons find theirs
// there.
func createLease(ctx context.Context, env *ClusterEnv, name string) error {
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: gpuv1alpha1.DefaultNodeLeaseNamespace},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(FieldManager), RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}
	if _, err := env.ControlPlane.Kube.CoordinationV1().Leases(gpuv1alpha1.DefaultNodeLeaseNamespace).Create(ctx, lease, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("creating the Lease of node %s: %w", name, err)
	}
	return nil
}
