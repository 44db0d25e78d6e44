package framework

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitOK polls url until it answers 200 OK, and gives up when the process
// exits, with the last lines of its log, or after timeout.
func (p *Process) WaitOK(ctx context.Context, url string, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if exited, err := p.Exited(); exited {
			return false, fmt.Errorf("%s exited (%v); last lines of %s:\n%s", p.name, err, p.logFile, p.LogTail(3000))
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}
