package gangfit

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// The Lease timing of kube-scheduler's own leader election: a leader that
// dies is replaced within leaseDuration, one that shuts down at once.
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// lead takes part in the election of the one scheduler process that
// decides the checks, until ctx ends. Every process holds the room of the
// Workloads already admitted (keep); only the leader decides new ones, so
// two scheduler pods running side by side during a rollout never promise
// the same room twice. A process that loses the Lease goes on holding
// room and runs for it again.
func (c *Controller) lead(ctx context.Context) {
	logger := klog.FromContext(ctx)
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	identity := fmt.Sprintf("%s_%s", host, uuid.NewUUID())
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, c.cfg.LeaseNamespace, c.cfg.LeaseName,
		c.cfg.Kube.CoreV1(), c.cfg.Kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity})
	if err != nil {
		logger.Error(err, "Making the gang-fit Lease lock; this process will not decide checks")
		return
	}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   leaseDuration,
		RenewDeadline:   renewDeadline,
		RetryPeriod:     retryPeriod,
		ReleaseOnCancel: true,
		Name:            c.cfg.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				logger.Info("Deciding the gang-fit checks", "lease", c.cfg.LeaseNamespace+"/"+c.cfg.LeaseName, "identity", identity)
				c.leading.Store(true)
				c.requeueAll()
			},
			OnStoppedLeading: func() {
				c.leading.Store(false)
				logger.Info("No longer deciding the gang-fit checks; holding the admitted Workloads' room", "lease", c.cfg.LeaseNamespace+"/"+c.cfg.LeaseName)
			},
		},
	})
	if err != nil {
		logger.Error(err, "Configuring the gang-fit election; this process will not decide checks")
		return
	}
	for ctx.Err() == nil {
		elector.Run(ctx)
	}
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
