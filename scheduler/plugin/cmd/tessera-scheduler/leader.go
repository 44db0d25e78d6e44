package main

import (
	"context"
	"sync"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// leaderLock is the scheduler's leader election lock, closing leading
// the first time it takes or renews the lock for itself: from then on the
// scheduler leads, until it loses the lock and exits.
type leaderLock struct {
	resourcelock.Interface
	leading chan<- struct{}
	once    sync.Once
}

func (l *leaderLock) Create(ctx context.Context, record resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, record)
	l.took(record, err)
	return err
}

func (l *leaderLock) Update(ctx context.Context, record resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, record)
	l.took(record, err)
	return err
}

func (l *leaderLock) took(record resourcelock.LeaderElectionRecord, err error) {
	if err == nil && record.HolderIdentity == l.Identity() {
		l.once.Do(func() { close(l.leading) })
	}
}
