package framework

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// The ports FreePort chooses from lie at or above lowestPort and outside
// the kernel's ephemeral range, which defaults to these bounds.
const (
	lowestPort        = 10000
	ephemeralRangeLow = 32768
	ephemeralRangeTop = 60999
	// portTries is how many ports FreePort tries before it gives up.
	portTries = 1000
)

// portLocks holds, until the process exits, the lock of each port
// FreePort handed out.
var portLocks struct {
	mu    sync.Mutex
	files []*os.File
}

// FreePort returns a loopback TCP port that is free now, for a process
// started afterwards to listen on. It is chosen outside the kernel's
// ephemeral range: a port inside it, such as listening on port 0 gives,
// may be taken by any outgoing connection before the process binds it
// (Kueue's health probe once failed so, "bind: address already in use",
// in a fresh-clone run of hack/test.sh). A lock file per port, held until
// this process exits, keeps the test processes that hack/test.sh runs
// side by side from being handed the same port.
func FreePort() (int, error) {
	low, top := ephemeralRange()
	if low <= lowestPort && top >= 65535 {
		return 0, fmt.Errorf("no port from %d up lies outside the ephemeral range %d-%d", lowestPort, low, top)
	}
	dir := portLockDir()
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return 0, err
	}
	for range portTries {
		port := lowestPort + rand.IntN(65536-lowestPort)
		if port >= low && port <= top {
			continue
		}
		ok, err := claimPort(dir, port)
		if err != nil {
			return 0, err
		}
		if ok {
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port found in %d tries outside the ephemeral range %d-%d", portTries, low, top)
}

// portLockDir is where the ports' lock files are, shared by every process
// on the machine.
func portLockDir() string { return filepath.Join(os.TempDir(), "tessera-test-ports") }

// claimPort takes the port's lock and checks that the port can be bound,
// keeping the lock when it can. It reports false when another process
// holds the lock or the port is in use.
func claimPort(dir string, port int) (bool, error) {
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return false, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return false, nil
		}
		return false, fmt.Errorf("locking port %d: %w", port, err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		_ = f.Close()
		return false, nil
	}
	_ = l.Close()
	portLocks.mu.Lock()
	portLocks.files = append(portLocks.files, f)
	portLocks.mu.Unlock()
	return true, nil
}

// ephemeralRange returns the bounds of the ports the kernel gives outgoing
// connections, or Linux's default where it cannot read them.
func ephemeralRange() (low, top int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return ephemeralRangeLow, ephemeralRangeTop
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return ephemeralRangeLow, ephemeralRangeTop
	}
	low, errLow := strconv.Atoi(fields[0])
	top, errTop := strconv.Atoi(fields[1])
	if errLow != nil || errTop != nil {
		return ephemeralRangeLow, ephemeralRangeTop
	}
	return low, top
}

// FreeAddress returns a loopback host:port from FreePort, failing the test
// when there is none.
func FreeAddress(t testing.TB) string {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
