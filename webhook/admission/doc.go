// Package admission holds Tessera's pod admission logic: the mutation that
// makes a GPU pod well-formed for Tessera's scheduler, the validation that
// refuses requests no GPU can ever serve, and the HTTP handler that speaks
// the AdmissionReview v1 protocol to kube-apiserver.
//
// A container may ask for whole GPUs with a bare count (nvidia.com/gpu: 2
// means two GPUs, each with all its memory and compute), or for a slice with
// memory, a memory percentage or cores; a slice without a count is a slice of
// one GPU, and the mutation writes that count of 1 so that the kubelet and
// the device plugin see it.
//
// In extender mode the mutation also writes each container's GPU quota
// totals (gpurequest.QuotaTotals) under gpu.tessera.dev/gpus, cores and
// memory, for a namespace's ResourceQuota to count, and the validation
// refuses a pod whose totals differ, that its namespace's quota has no
// room for, or whose GPU slice states no compute where a quota limits
// compute (quota.go, quotaroom.go, quotaunstated.go). A batch/v1 Job, which Kueue counts
// from its pod template before any pod exists, gets the same counts and
// totals in its template and is held to the same rules (job.go).
//
// In DRA mode (the webhook's, or a namespace's mode label) the mutation
// holds the pod to the same rules and then turns its GPU resources into
// claims of Tessera's DRA driver; package draclaims says what the claims
// are.
package admission
