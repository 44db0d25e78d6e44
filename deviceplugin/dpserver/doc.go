// Package dpserver speaks the kubelet device-plugin API (v1beta1): it
// serves the plugin's socket in the kubelet's device-plugin directory,
// registers the GPU count resource with the kubelet, streams the virtual
// devices and their health, and hands allocation calls to the allocator.
// When the kubelet restarts (kubelet.sock re-created, or the plugin's own
// socket removed) it serves and registers again.
package dpserver
