// Package nodeagent plays the kubelet's part for a simulated node, for the
// local cluster and end-to-end tests where no kubelet runs: it serves the
// device-plugin Registration service on kubelet.sock, follows each
// registered plugin's devices through ListAndWatch, and, for every pod
// bound to its node, asks the plugins for devices container by container as
// the kubelet's device manager would (GetPreferredAllocation, then
// Allocate, init containers first), records the answers, and marks the pod
// Running — or Failed with the plugin's error. For a pod with resource
// claims it plays the kubelet's DRA manager: it finds each driver through
// its registration socket, calls NodePrepareResources for the pod's
// allocated claims over the driver's gRPC socket, records the CDI devices
// each container gets, and calls NodeUnprepareResources once no pod on the
// node uses a claim, or once it finds the pod gone. It also finishes
// graceful deletions, as a kubelet does once the containers are stopped.
// Run again, it keeps what the kubelet keeps in its checkpoints, as a
// restarted kubelet does; after Reboot it also starts the containers of
// running pods again, preparing their claims anew.
package nodeagent
