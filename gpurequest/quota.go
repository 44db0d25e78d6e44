package gpurequest

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// QuotaResources are the resources a namespace's GPU quota counts, in a
// fixed order: GPU count, compute, memory.
var QuotaResources = []corev1.ResourceName{gpuv1alpha1.QuotaGPUs, gpuv1alpha1.QuotaCores, gpuv1alpha1.QuotaMemory}

// QuotaTotals is what one container counts against its namespace's GPU
// quota: its request summed over its GPUs, as Tessera allocates it, in so
// far as it is known before a GPU is chosen. The per-GPU resources a
// container writes (nvidia.com/gpumem: 10000 with nvidia.com/gpu: 2) are
// counted by ResourceQuota as written, once; these are the totals
// (20000).
type QuotaTotals struct {
	// GPUs is the number of GPUs.
	GPUs int64
	// Cores is the compute in percent of one GPU, summed over the GPUs.
	// Exclusive use takes a whole GPU's compute, and so does a whole GPU
	// asked for by a count alone: 100 each.
	Cores int64
	// MemoryMiB is the memory summed over the GPUs, or 0 when it depends
	// on the GPU chosen: a memory percentage, or a whole GPU's memory. The
	// scheduler counts those where it chooses the GPUs.
	MemoryMiB int64
}

// QuotaTotals returns what the container counts against its namespace's
// GPU quota.
func (r ContainerRequest) QuotaTotals() QuotaTotals {
	count := int64(r.Count)
	t := QuotaTotals{GPUs: count, Cores: int64(r.Cores) * count}
	if r.Cores == MaxPercent || (r.Cores == 0 && r.WholeMemory()) {
		t.Cores = MaxPercent * count
	}
	if r.MemoryMiB > 0 {
		t.MemoryMiB = r.MemoryMiB * count
	}
	return t
}

// ResourceList returns the totals under the names of QuotaResources,
// leaving out those that are 0: a pod writes them as requests, and as
// limits equal to them, since the API server wants both for an extended
// resource.
func (t QuotaTotals) ResourceList() corev1.ResourceList {
	l := corev1.ResourceList{}
	for name, v := range map[corev1.ResourceName]int64{
		gpuv1alpha1.QuotaGPUs: t.GPUs, gpuv1alpha1.QuotaCores: t.Cores, gpuv1alpha1.QuotaMemory: t.MemoryMiB,
	} {
		if v > 0 {
			l[name] = *resource.NewQuantity(v, resource.DecimalSI)
		}
	}
	return l
}

// QuotaUnit says what a quota resource counts, for messages.
func QuotaUnit(name corev1.ResourceName) string {
	switch name {
	case gpuv1alpha1.QuotaMemory:
		return "GPU memory in MiB"
	case gpuv1alpha1.QuotaCores:
		return "GPU compute in percent of one GPU"
	case gpuv1alpha1.QuotaGPUs:
		return "GPUs"
	}
	return string(name)
}

// QuotaExcess is a pod's GPU request that a ResourceQuota of its namespace
// has no room for. Its message is the one both the admission webhook and
// the scheduler give, so that a pod refused or held for its quota says the
// same wherever that is decided.
type QuotaExcess struct {
	// Namespace is the pod's namespace.
	Namespace string
	// Quota is the name of the ResourceQuota.
	Quota string
	// Resource is one of QuotaResources.
	Resource corev1.ResourceName
	// Used is what the namespace's pods use now, Asked what the pod asks
	// for, and Limit the quota's hard limit.
	Used, Asked, Limit int64
}

// String names the namespace, the quota, the resource and its unit, what is
// used, what was asked and the limit.
func (e QuotaExcess) String() string {
	return fmt.Sprintf("namespace %s would exceed its GPU quota (ResourceQuota %s) on requests.%s (%s): used %d, asked %d, limit %d",
		e.Namespace, e.Quota, e.Resource, QuotaUnit(e.Resource), e.Used, e.Asked, e.Limit)
}

// ComputeUnbounded reports whether the container shares its GPUs with no
// compute stated: a slice of memory without cores, which counts 0 toward
// the namespace's compute quota and runs with no compute limit at all.
func (r ContainerRequest) ComputeUnbounded() bool {
	return r.Count > 0 && r.Cores == 0 && !r.WholeMemory()
}

// QuotaUnstated is a pod refused because its namespace's GPU quota limits
// compute and some of its containers share GPUs without stating theirs,
// as kube-apiserver refuses a pod that states no CPU in a namespace whose
// quota limits CPU.
type QuotaUnstated struct {
	// Namespace is the pod's namespace, and Quota the name of the
	// ResourceQuota that limits compute.
	Namespace, Quota string
	// Field is what each container must state: the pod's cores resource,
	// or a claim's cores capacity.
	Field string
	// Containers name the containers, or claim requests, that do not.
	Containers []string
}

// String names the namespace, the quota and its resource, what must be
// stated and by which containers, in kube-apiserver's words for CPU.
func (e QuotaUnstated) String() string {
	return fmt.Sprintf("namespace %s limits GPU compute (ResourceQuota %s on requests.%s): must specify %s for: %s",
		e.Namespace, e.Quota, gpuv1alpha1.QuotaCores, e.Field, strings.Join(e.Containers, ","))
}
