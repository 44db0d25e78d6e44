// Package app wires the scheduler extender together: API clients,
// informers, the GPU view, the in-flight gate, the HTTP server with the
// extender, health and metrics endpoints. Run serves until its context
// ends; tests, the local cluster and the benchmark start it in process.
package app
