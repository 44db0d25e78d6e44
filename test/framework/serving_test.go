package framework

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// readyAfter serves /readyz over TLS as kube-scheduler does while its
// informers sync: 503 with the failing check for the first n answers,
// then ok. It returns the server's port and a count of the answers.
func readyAfter(t *testing.T, n int64) (int, *atomic.Int64) {
	t.Helper()
	var answers atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answers.Add(1) <= n {
			http.Error(w, "[-]sched-handler-sync failed: handlers are not fully synchronized", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port, &answers
}

// TestWaitServing pins the wait for a scheduler to become ready: it lasts
// as long as the process lives and ctx allows, however long syncing a
// large cluster takes, and ends at once, with the process's log, when the
// process exits.
func TestWaitServing(t *testing.T) {
	t.Run("ready after syncing", func(t *testing.T) {
		port, answers := readyAfter(t, 5)
		p := startProcess(t, "sleep", "60")
		if err := p.waitServing(t.Context(), port); err != nil {
			t.Fatalf("waitServing: %v", err)
		}
		if got := answers.Load(); got != 6 {
			t.Errorf("waitServing returned after %d answers, want the first ok, the 6th", got)
		}
	})
	t.Run("never ready", func(t *testing.T) {
		port, answers := readyAfter(t, 1<<62)
		p := startProcess(t, "sleep", "60")
		// The caller's bound ends the wait after a few answers.
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go func() {
			for answers.Load() < 3 {
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
		}()
		err := p.waitServing(ctx, port)
		if err == nil || !strings.Contains(err.Error(), "503 Service Unavailable: [-]sched-handler-sync failed") {
			t.Errorf("waitServing = %v, want the failing check named", err)
		}
	})
	t.Run("exited", func(t *testing.T) {
		port, _ := readyAfter(t, 1<<62)
		p := startProcess(t, "sh", "-c", "echo informers failed; exit 3")
		// No deadline: only the exit can end the wait.
		err := p.waitServing(t.Context(), port)
		if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "informers failed") {
			t.Errorf("waitServing = %v, want the exit and the log's last lines", err)
		}
	})
}

// startProcess runs bin with args for the rest of the test.
func startProcess(t *testing.T, bin string, args ...string) *Process {
	t.Helper()
	p, err := StartProcess(t.TempDir(), bin, "proc", args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}
