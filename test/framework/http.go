package framework

import (
	"context"
	"io"
	"net/http"
)

// HTTPGet returns the status and body of a GET of url; when the GET
// failed, status 0 and what failed as the body.
func HTTPGet(ctx context.Context, url string) (status int, body string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
