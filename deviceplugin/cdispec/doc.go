// Package cdispec writes the Container Device Interface spec of the node's
// GPUs, which the cdi device-list strategy names in its Allocate answers:
// one CDI device per GPU with its device files, and the driver's control
// devices and libraries for every container that gets one.
package cdispec
