// Package fault is Tessera's fault suite. On a real control plane it runs,
// once per scheduler mode, what places pods (kube-scheduler on the shipped
// configuration and the scheduler extender; tessera-scheduler on its
// shipped configuration; or, in DRA mode, stock kube-scheduler allocating
// the claims Tessera's webhook makes of the pods) and simulated GPU nodes
// each served by Tessera's node daemon (its device plugin, or in DRA mode
// its DRA driver, run as a process of its own) and a node agent playing
// the kubelet. Under a steady load of GPU pods, more than fit, with the
// oldest running pod deleted every second, it kills the extender or
// tessera-scheduler repeatedly, restarts kube-apiserver, restarts a device
// plugin, and restarts a node's kubelet stand-in the way the kubelet
// restarts (its device-plugin directory cleared, kubelet.sock created
// again, its checkpoints kept). In DRA mode it kills a node daemon while
// pods are being prepared on its node and reboots nodes (daemon and
// kubelet killed, the CDI spec directory emptied, both started again)
// instead of killing a placer and restarting a device plugin. After each
// fault it checks, from API state alone, that no GPU holds more memory,
// cores or shares than it has (in DRA mode: no device's allocated claims
// consume more than its ResourceSlice offers), that no allocation or claim
// is orphaned, that every bound GPU pod has exactly its own allocation or
// claim on its node and was served from it (in DRA mode: its containers'
// CDI devices, resolved as a container runtime resolves them, name
// exactly its claim's GPUs and their memory), that once the pods are
// deleted no node daemon keeps a claim in its checkpoint or a CDI spec,
// and it measures how long any pod stayed Pending while bound or while a
// GPU could hold it. docs/faults.md records those waits.
//
// TestGangFitFaults runs Kueue and the gang-fit admission check under a
// stream of Jobs of several GPU-slice pods on fragmented GPUs, through a
// placer killed and rolled over, a node deleted and added again and
// kube-apiserver restarts, and checks that held room is never
// over-committed nor left waiting, that no Workload is rejected, and that
// a free lets a waiting Workload in before Kueue's own retry.
//
// TestPodGroupFaults runs tessera-scheduler with Kubernetes' Workload API
// on under a stream of PodGroups of GPU slices on fragmented GPUs, through
// tessera-scheduler killed while gangs wait, the bindings of each gang's
// last member refused for a while and kube-apiserver restarts, and checks
// that no GPU is over-committed, that no gang stays half placed past its
// bound, and that tessera-scheduler's view holds exactly what the bound
// pods are allocated.
package fault
