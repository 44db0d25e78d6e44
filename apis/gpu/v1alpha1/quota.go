package v1alpha1

import corev1 "k8s.io/api/core/v1"

// A namespace's GPU quota is a Kubernetes ResourceQuota on the three
// resources below, written with the requests. prefix as every extended
// resource is (requests.gpu.tessera.dev/memory: 40000). They are totals as
// Tessera allocates, not the per-GPU figures a container writes under
// nvidia.com/gpumem: the webhook adds them to every container that asks for
// GPUs, so ResourceQuota counts what it can at admission (and applies
// Kubernetes' own rule for init containers), and the scheduler enforces
// exactly, where the GPUs are chosen, what is known only then (a
// percentage or a whole GPU, at the memory of the GPU it gets). No node
// reports these resources: the kubelet ignores them, and the schedulers
// are told to.
const (
	// QuotaMemory is GPU memory in MiB, summed over the container's GPUs.
	QuotaMemory corev1.ResourceName = "gpu.tessera.dev/memory"
	// QuotaCores is GPU compute in percent of one GPU, summed over the
	// container's GPUs; exclusive use and a whole GPU count 100 each.
	QuotaCores corev1.ResourceName = "gpu.tessera.dev/cores"
	// QuotaGPUs is the number of GPUs.
	QuotaGPUs corev1.ResourceName = "gpu.tessera.dev/gpus"
)
