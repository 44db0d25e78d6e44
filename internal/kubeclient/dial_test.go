package kubeclient

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
)

// refusingAddress returns a loopback address nothing listens on.
func refusingAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func dialAsync(config *rest.Config, addr string) <-chan error {
	done := make(chan error, 1)
	go func() {
		conn, err := config.Dial(context.Background(), "tcp", addr)
		if err == nil {
			conn.Close()
		}
		done <- err
	}()
	return done
}

// waitTimer waits until the dial is waiting to try again.
func waitTimer(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the dial does not wait to try again")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWaitForRestartsConnectsOnceTheServerListens(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	caller := &rest.Config{Host: "https://127.0.0.1:1"}
	config := WaitForRestarts(caller, clk)
	if caller.Dial != nil {
		t.Fatal("the caller's configuration changed")
	}
	addr := refusingAddress(t)
	done := dialAsync(config, addr)
	waitTimer(t, clk)
	clk.Step(DialRetry)
	waitTimer(t, clk)
	select {
	case err := <-done:
		t.Fatalf("the dial returned while nothing listens: %v", err)
	default:
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	clk.Step(DialRetry)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("dial once the server listens: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the dial did not connect once the server listened")
	}
}

func TestWaitForRestartsGivesUpAfterItsPatience(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	done := dialAsync(WaitForRestarts(&rest.Config{}, clk), refusingAddress(t))
	waitTimer(t, clk)
	clk.Step(DialPatience)
	select {
	case err := <-done:
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial error %v, want connection refused", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the dial waits beyond its patience")
	}
}
