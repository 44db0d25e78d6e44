// Package draclaims turns the GPU resources of a HAMi-style pod into claims
// that stock kube-scheduler allocates from the GPUs of Tessera's DRA
// driver, for the admission webhook's DRA mode.
//
// Each container that asks for GPUs gets a claim of its own, made by
// kube-controller-manager from a ResourceClaimTemplate in the pod's
// namespace: one request for the container's count of GPUs, each with the
// request's memory and cores as consumable capacity, the pod's type, UUID
// and MIG annotations as CEL selectors, and constraints that keep the GPUs
// distinct. Where DRA cannot express a request, the errors name the field
// and its limit. The admission package decides which pods are translated,
// holds them to the rules of extender mode first, and writes the patch.
package draclaims
