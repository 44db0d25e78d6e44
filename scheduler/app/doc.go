// Package app wires the scheduler extender together: its HTTP servers
// with the extender's verbs, health and metrics endpoints, over the GPU
// view, the in-flight gate and the informers that scheduler/viewsync
// builds and keeps for every front end. Run serves until its context ends;
// tests, the local cluster and the benchmark start it in process.
package app
