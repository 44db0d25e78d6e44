// Package gpurequest reads what a pod asks of Tessera: the GPU slices its
// containers request under the configured resource names, and the placement
// annotations on the pod. It is shared by the scheduler extender and the
// admission webhook so that both read a pod the same way.
package gpurequest
