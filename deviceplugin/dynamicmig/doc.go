// Package dynamicmig makes the MIG instances that the scheduler placed on
// GPUs whose instances are made on demand, when the kubelet allocates a
// container, and destroys those that no live allocation needs any more.
package dynamicmig
