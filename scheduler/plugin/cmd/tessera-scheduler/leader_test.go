package main

import (
	"context"
	"errors"
	"testing"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// fakeLock is a lock whose writes fail with err.
type fakeLock struct {
	resourcelock.Interface
	err error
}

func (f *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return f.err }
func (f *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error { return f.err }
func (f *fakeLock) Identity() string                                                { return "me" }

func TestLeaderLockLeadsOnceItHoldsTheLock(t *testing.T) {
	ctx := t.Context()
	inner := &fakeLock{err: errors.New("conflict")}
	leading := make(chan struct{})
	lock := &leaderLock{Interface: inner, leading: leading}
	isLeading := func() bool {
		select {
		case <-leading:
			return true
		default:
			return false
		}
	}
	if lock.Create(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}) == nil || isLeading() {
		t.Fatal("a failed take of the lock leads")
	}
	inner.err = nil
	if lock.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: ""}) != nil || isLeading() {
		t.Fatal("releasing the lock leads")
	}
	if lock.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "other"}) != nil || isLeading() {
		t.Fatal("writing another's hold leads")
	}
	if lock.Create(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}) != nil || !isLeading() {
		t.Fatal("taking the lock does not lead")
	}
	// Renewing closes nothing twice.
	if lock.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}) != nil {
		t.Fatal("renewing failed")
	}
}
