package framework

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitOK polls url until it answers 200 OK, and gives up when the process
// exits, with the last lines of its log, or after timeout.
func (p *Process) WaitOK(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return p.pollOK(ctx, &http.Client{Timeout: time.Second}, url)
}

// waitServing polls a control-plane component's /readyz on its secure port
// until it answers ok, the process exits or ctx ends. The component serves
// with a self-signed certificate made at start, so the check does not
// verify it: it asks only whether the process is up and ready.
func (p *Process) waitServing(ctx context.Context, port int) error {
	client := &http.Client{
		Timeout:   time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback readiness probe
	}
	return p.pollOK(ctx, client, "https://127.0.0.1:"+strconv.Itoa(port)+"/readyz")
}

// pollOK polls url with client until it answers 200 OK. It gives up when
// the process exits or ctx ends, with the last answer (a readiness
// endpoint says there which check still fails) and the last lines of the
// process's log.
func (p *Process) pollOK(ctx context.Context, client *http.Client, url string) error {
	var last string
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if exited, err := p.Exited(); exited {
			return false, fmt.Errorf("%s exited (%v)", p.name, err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			// A request that ctx's end cut short says nothing of the
			// process: keep the answer before it.
			if ctx.Err() == nil {
				last = err.Error()
			}
			return false, nil
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return true, nil
		}
		last = resp.Status + ": " + strings.TrimSpace(string(body))
		return false, nil
	})
	if err == nil {
		return nil
	}
	if last != "" {
		err = fmt.Errorf("%w; %s last answered %s", err, url, last)
	}
	return fmt.Errorf("%w; last lines of %s:\n%s", err, p.logFile, p.LogTail(3000))
}
