package framework

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePortAvoidsTheEphemeralRange checks that the ports FreePort hands
// out lie outside the range outgoing connections take theirs from, are
// each handed out once, and can be bound.
func TestFreePortAvoidsTheEphemeralRange(t *testing.T) {
	low, top := ephemeralRange()
	seen := map[int]bool{}
	for range 200 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if port < lowestPort || (port >= low && port <= top) {
			t.Errorf("port %d: want one from %d up outside the ephemeral range %d-%d", port, lowestPort, low, top)
		}
		if seen[port] {
			t.Errorf("port %d handed out twice", port)
		}
		seen[port] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Errorf("binding port %d: %v", port, err)
			continue
		}
		_ = l.Close()
	}
}

// TestFreePortPassesBoundPorts checks that a port something listens on is
// never handed out.
func TestFreePortPassesBoundPorts(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	ok, err := claimPort(t.TempDir(), port)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Errorf("port %d, which a listener holds, was claimed", port)
	}
}

// TestFreePortLocksWhatItHandsOut checks that a port handed out stays
// locked against the other processes that hack/test.sh runs side by side.
func TestFreePortLocksWhatItHandsOut(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ok, err := claimPort(portLockDir(), port)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Errorf("port %d was claimed again while its lock is held", port)
	}
}
