package gangfit

import (
	"context"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/scheduler/election"
)

// lead takes part in the election of the one scheduler process that
// decides the checks, until ctx ends. Every process holds the room of the
// Workloads already admitted (keep); only the leader decides new ones, so
// two scheduler pods running side by side during a rollout never promise
// the same room twice. A process that loses the Lease goes on holding
// room and runs for it again.
func (c *Controller) lead(ctx context.Context) {
	logger := klog.FromContext(ctx)
	lease := c.cfg.LeaseNamespace + "/" + c.cfg.LeaseName
	election.Run(ctx, c.cfg.Kube, c.cfg.LeaseNamespace, c.cfg.LeaseName, "gang-fit checks", leaderelection.LeaderCallbacks{
		OnStartedLeading: func(context.Context) {
			logger.Info("Deciding the gang-fit checks", "lease", lease)
			c.leading.Store(true)
			c.requeueAll()
		},
		OnStoppedLeading: func() {
			c.leading.Store(false)
			logger.Info("No longer deciding the gang-fit checks; holding the admitted Workloads' room", "lease", lease)
		},
	})
}

// requeueAll queues every Workload, for a new leader to decide those
// waiting, and marks every gang-fit AdmissionCheck active.
func (c *Controller) requeueAll() {
	for _, key := range c.workloads.GetStore().ListKeys() {
		c.queue.Add(key)
	}
	for _, obj := range c.checks.GetStore().List() {
		c.activate(obj)
	}
}
