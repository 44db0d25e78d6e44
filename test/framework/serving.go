package framework

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// waitServing polls a control-plane component's /readyz on its secure port.
// The component serves with a self-signed certificate made at start, so the
// check does not verify it: it asks only whether the process is up.
func waitServing(port int, timeout time.Duration) error {
	client := &http.Client{
		Timeout:   time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback readiness probe
	}
	url := "https://127.0.0.1:" + strconv.Itoa(port) + "/readyz"
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		resp, err := client.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s answered %s", url, resp.Status)
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("after %s: %w", timeout, last)
}
