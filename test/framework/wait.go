package framework

import (
	"context"
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitFor polls cond until it holds, failing the test with its last
// explanation after timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, why := cond()
		last = why
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %s", what, last)
	}
}

// WaitReady polls url, a daemon's readiness endpoint such as the kubelet's
// probe reads, until it answers 200 OK, failing the test after a minute.
func WaitReady(t testing.TB, what, url string) {
	t.Helper()
	WaitFor(t, time.Minute, what+" to be ready", func() (bool, string) {
		resp, err := http.Get(url)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
}
