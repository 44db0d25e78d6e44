// Package app wires Tessera's admission webhook together: options and
// flags, informers for namespaces and GPUNodes, the serving certificate,
// and the HTTPS server with /mutate, /validate, /healthz, /readyz and
// /metrics. Server is embeddable: tests and the local cluster run it in
// process with Run(ctx).
package app
