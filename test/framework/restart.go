package framework

import (
	"context"
	"slices"
	"strconv"
)

// RestartAPIServer stops kube-apiserver as a rolling update of the control
// plane does (SIGTERM, then SIGKILL after ten seconds) and starts it again
// with the same flags, port and etcd, then waits until it is ready. Clients
// built from Config keep working: they reconnect to the same address. Each
// run logs to its own file (kube-apiserver.log, kube-apiserver-1.log, ...).
func (cp *ControlPlane) RestartAPIServer(ctx context.Context) error {
	old := cp.apiServer
	old.Stop()
	cp.procs = slices.DeleteFunc(cp.procs, func(p *Process) bool { return p == old })
	cp.apiServerRuns++
	p, err := cp.startAPIServerProcess("kube-apiserver-" + strconv.Itoa(cp.apiServerRuns))
	if err != nil {
		return err
	}
	cp.apiServer = p
	return cp.waitHealthy(ctx, "kube-apiserver", "/readyz")
}

// KillProcess kills one of the control plane's processes, such as a
// scheduler, as a crash would (SIGKILL), and forgets it: it is not stopped
// again, and the control plane does not take its exit for a failure, as it
// does for any process that exits while kube-apiserver is awaited.
func (cp *ControlPlane) KillProcess(p *Process) {
	p.Kill()
	cp.procs = slices.DeleteFunc(cp.procs, func(q *Process) bool { return q == p })
}
