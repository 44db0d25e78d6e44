// Package health is the device plugin's answer to the kubelet's probes:
// named checks that the plugin's parts pass or fail, served as /healthz
// (liveness: what a restart can mend, such as NVML that failed to start or
// a registration the kubelet lost) and /readyz (everything, such as a node
// where the driver reports no GPU).
package health
