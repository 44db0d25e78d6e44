package quota

import (
	corev1 "k8s.io/api/core/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// Limit is one hard limit, in the unit of its resource.
type Limit struct {
	// Hard is the most the namespace may take.
	Hard int64
	// Set is false when no quota limits the resource.
	Set bool
	// Quota names the ResourceQuota whose limit it is.
	Quota string
}

// Limits are a namespace's hard GPU limits; the zero value limits nothing.
type Limits struct {
	MemoryMiB Limit
	Cores     Limit
	GPUs      Limit
}

// Enforced reports whether any resource is limited.
func (l Limits) Enforced() bool { return l.MemoryMiB.Set || l.Cores.Set || l.GPUs.Set }

// Exceeded says why a pod of the namespace asking for asked does not fit
// beside what the namespace uses, naming the first resource over its
// limit (in gpurequest.QuotaResources' order), the quota, what is used,
// what is asked and the limit, in the words the admission webhook uses
// (gpurequest.QuotaExcess); it returns "" when the pod fits. A namespace
// already over a limit lowered below its use takes no more of that
// resource; a pod asking for none of it still fits, as ResourceQuota
// counts it.
func (l Limits) Exceeded(namespace string, used, asked placement.Use) string {
	for _, name := range gpurequest.QuotaResources {
		limit, u, a := l.of(name, used, asked)
		if limit.Set && a > 0 && u+a > limit.Hard {
			return gpurequest.QuotaExcess{
				Namespace: namespace, Quota: limit.Quota, Resource: name, Used: u, Asked: a, Limit: limit.Hard,
			}.String()
		}
	}
	return ""
}

// Unstated says why no node takes a pod of the namespace whose
// containers share GPUs without stating their compute
// (gpurequest.ContainerRequest.ComputeUnbounded) while a quota limits
// compute: they would count 0 toward it and run with no compute limit.
// field is what they must state, and the words are the admission
// webhook's (gpurequest.QuotaUnstated). It returns "" when compute is not
// limited or every container states it.
func (l Limits) Unstated(namespace string, containers []gpurequest.ContainerRequest, field string) string {
	if !l.Cores.Set {
		return ""
	}
	var unstated []string
	for _, c := range containers {
		if c.ComputeUnbounded() {
			unstated = append(unstated, c.Name)
		}
	}
	if len(unstated) == 0 {
		return ""
	}
	return gpurequest.QuotaUnstated{Namespace: namespace, Quota: l.Cores.Quota, Field: field, Containers: unstated}.String()
}

// of returns the limit of the quota resource name, and what used and
// asked take of it.
func (l Limits) of(name corev1.ResourceName, used, asked placement.Use) (Limit, int64, int64) {
	switch name {
	case gpuv1alpha1.QuotaMemory:
		return l.MemoryMiB, used.MemoryMiB, asked.MemoryMiB
	case gpuv1alpha1.QuotaCores:
		return l.Cores, used.Cores, asked.Cores
	case gpuv1alpha1.QuotaGPUs:
		return l.GPUs, used.GPUs, asked.GPUs
	}
	return Limit{}, 0, 0
}

// tighten lowers l to hard, the limit of the ResourceQuota named quota,
// or sets it. Of equal limits the first quota by name is named, whatever
// order the quotas come in.
func (l *Limit) tighten(hard int64, quota string) {
	if !l.Set || hard < l.Hard || (hard == l.Hard && quota < l.Quota) {
		l.Hard, l.Set, l.Quota = hard, true, quota
	}
}

// Check is Exceeded as an error: a *ExceededError, or nil when the pod
// fits.
func (l Limits) Check(namespace string, used, asked placement.Use) error {
	if why := l.Exceeded(namespace, used, asked); why != "" {
		return &ExceededError{Reason: why, Asked: asked}
	}
	return nil
}

// ExceededError is a pod that does not fit its namespace's GPU quota.
type ExceededError struct {
	// Reason says which limit, with what is used, asked and allowed.
	Reason string
	// Asked is what the pod asked.
	Asked placement.Use
}

func (e *ExceededError) Error() string { return e.Reason }
