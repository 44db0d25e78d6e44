package kubeclient

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// restartingServer answers the first unavailable requests with status
// and header, then serves them, echoing the request's body.
func restartingServer(t *testing.T, unavailable int32, status int, header string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if requests.Add(1) <= unavailable {
			if header != "" {
				w.Header().Set("Retry-After", header)
			}
			w.WriteHeader(status)
			return
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

func TestWaitForServing(t *testing.T) {
	tests := []struct {
		name        string
		unavailable int32
		status      int
		retryAfter  string
		// steps is how often the test lets the retry timer fire.
		steps        int
		wantStatus   int
		wantRequests int32
	}{
		{name: "a starting server is asked again until it serves", unavailable: 3, status: http.StatusServiceUnavailable, retryAfter: "5",
			steps: 3, wantStatus: http.StatusOK, wantRequests: 4},
		{name: "a 503 without Retry-After goes to the caller", unavailable: 1, status: http.StatusServiceUnavailable,
			wantStatus: http.StatusServiceUnavailable, wantRequests: 1},
		{name: "a 429 goes to the caller, whose back-off it asks for", unavailable: 1, status: http.StatusTooManyRequests, retryAfter: "1",
			wantStatus: http.StatusTooManyRequests, wantRequests: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, requests := restartingServer(t, tt.unavailable, tt.status, tt.retryAfter)
			clk := clocktesting.NewFakeClock(time.Now())
			rt := &waitForServing{next: http.DefaultTransport, clock: clk}
			req, err := http.NewRequest(http.MethodPut, srv.URL, strings.NewReader("status"))
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan *http.Response, 1)
			go func() {
				resp, err := rt.RoundTrip(req)
				if err != nil {
					t.Error(err)
				}
				done <- resp
			}()
			for range tt.steps {
				waitTimer(t, clk)
				clk.Step(DialRetry)
			}
			var resp *http.Response
			select {
			case resp = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the request did not return")
			}
			if resp == nil {
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus || requests.Load() != tt.wantRequests {
				t.Errorf("status %d after %d requests, want %d after %d", resp.StatusCode, requests.Load(), tt.wantStatus, tt.wantRequests)
			}
			if tt.wantStatus == http.StatusOK && string(body) != "status" {
				t.Errorf("the server got the body %q, want it whole again", body)
			}
		})
	}
}

func TestWaitForServingGivesUpAfterItsPatience(t *testing.T) {
	srv, _ := restartingServer(t, 1000, http.StatusServiceUnavailable, "5")
	clk := clocktesting.NewFakeClock(time.Now())
	rt := &waitForServing{next: http.DefaultTransport, clock: clk}
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() {
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Error(err)
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	waitTimer(t, clk)
	clk.Step(DialPatience)
	select {
	case status := <-done:
		if status != http.StatusServiceUnavailable {
			t.Fatalf("status %d once patience ended, want 503", status)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request did not give up once patience ended")
	}
}
