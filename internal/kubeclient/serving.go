package kubeclient

import (
	"io"
	"net/http"

	"k8s.io/utils/clock"
)

// waitForServing sends a request again, every DialRetry for up to
// DialPatience, while the API server answers it 503 with a Retry-After
// header: the answer of a kube-apiserver that is shutting down or has not
// yet installed the request's path. Other answers, 429 (too many requests,
// a watch cache still filling) among them, go to the caller as they came.
type waitForServing struct {
	next  http.RoundTripper
	clock clock.Clock
}

// RoundTrip sends req until the API server serves it or patience ends.
func (w *waitForServing) RoundTrip(req *http.Request) (*http.Response, error) {
	deadline := w.clock.Now().Add(DialPatience)
	for {
		resp, err := w.next.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
			!w.clock.Now().Before(deadline) {
			return resp, err
		}
		again, ok := rewound(req)
		if !ok {
			return resp, nil
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-w.clock.After(DialRetry):
		}
		req = again
	}
}

// rewound returns a copy of req to send again, with its body from the
// start; ok is false when the body cannot be read again.
func rewound(req *http.Request) (*http.Request, bool) {
	again := req.Clone(req.Context())
	if req.Body == nil || req.Body == http.NoBody {
		return again, true
	}
	if req.GetBody == nil {
		return nil, false
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, false
	}
	again.Body = body
	return again, true
}

// WrappedRoundTripper returns the transport it sends through.
func (w *waitForServing) WrappedRoundTripper() http.RoundTripper { return w.next }
