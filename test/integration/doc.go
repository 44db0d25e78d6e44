// Package integration tests Tessera's API against a real control plane:
// the CRDs as shipped, the generated clientset, informers and listers,
// server-side validation, printer columns and garbage collection.
package integration
