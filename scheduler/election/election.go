// Package election elects the one scheduler process that decides what
// only one may: the gang-fit checks, or which pods the extender's fit gate
// releases. Two scheduler pods run side by side during a rollout; without
// it, both would promise the same room.
package election

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
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

// Run takes part in the election of the Lease namespace/name until ctx
// ends, standing again each time it loses: callbacks hear when this
// process starts leading (with a context that ends when it stops) and
// when it stops. what names the decisions in the logs.
func Run(ctx context.Context, kube kubernetes.Interface, namespace, name, what string, callbacks leaderelection.LeaderCallbacks) {
	logger := klog.FromContext(ctx)
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	identity := fmt.Sprintf("%s_%s", host, uuid.NewUUID())
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, namespace, name,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity})
	if err != nil {
		logger.Error(err, "Making the Lease lock; this process will not decide "+what, "lease", namespace+"/"+name)
		return
	}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   leaseDuration,
		RenewDeadline:   renewDeadline,
		RetryPeriod:     retryPeriod,
		ReleaseOnCancel: true,
		Name:            name,
		Callbacks:       callbacks,
	})
	if err != nil {
		logger.Error(err, "Configuring the election; this process will not decide "+what, "lease", namespace+"/"+name)
		return
	}
	logger.V(2).Info("Standing for election", "lease", namespace+"/"+name, "identity", identity)
	for ctx.Err() == nil {
		elector.Run(ctx)
	}
}
