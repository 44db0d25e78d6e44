// Package driver finds the NVIDIA driver's user-space files under a driver
// root: the NVML library the plugin loads itself, and the libraries and
// tools a container needs, which the CDI spec mounts.
package driver
