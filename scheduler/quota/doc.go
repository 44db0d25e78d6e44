// Package quota reads a namespace's GPU quota, the hard limits of its
// ResourceQuotas on Tessera's GPU resources (apis/gpu/v1alpha1: QuotaMemory,
// QuotaCores, QuotaGPUs, written with the requests. prefix), and decides
// whether what a pod would take fits beside what the namespace holds.
//
// ResourceQuota itself refuses at admission what the webhook can count on
// the pod. The scheduler enforces the limits exactly where the GPUs are
// chosen, since only then is known what a percentage of memory or a whole
// GPU takes, and a pod that skipped the webhook carries no totals at all.
//
// Only quotas without scopes are enforced here: a scope (Terminating,
// BestEffort, PriorityClass, ...) selects the pods it counts by what the
// scheduler does not weigh, so a scoped quota is left to ResourceQuota's
// admission, on what the pods carry. Of several quotas in a namespace the
// tightest limit of each resource holds, as ResourceQuota holds each.
package quota
