package httpserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
)

// short are timeouts short enough for a test to see them pass.
var short = Timeouts{ReadHeader: 200 * time.Millisecond, Read: 300 * time.Millisecond, Write: 10 * time.Second, Idle: 300 * time.Millisecond}

// start serves h with short timeouts until the test ends.
func start(t *testing.T, h http.Handler) string {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, time.Second, Listener{Server: New(ctx, h, short), Listener: ln}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// echo answers with the length of the body it read.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, "%d", len(body))
})

// TestSlowClientsAreCut holds connections open the ways a slow or idle
// client does, many at once, and waits for the server to close each.
func TestSlowClientsAreCut(t *testing.T) {
	addr := start(t, echo)
	clients := map[string]string{
		// The header arrives, then one byte of a 1,000-byte body.
		"trickled body": "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{",
		// Half a header, never finished.
		"unfinished header": "POST / HTTP/1.1\r\nHost: x\r\n",
		// A whole request, then the connection kept alive and idle.
		"idle keep-alive": "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
	}
	const each = 30
	type result struct {
		client string
		err    error
	}
	results := make(chan result, each*len(clients))
	for name, sent := range clients {
		for range each {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, sent); err != nil {
				t.Fatal(err)
			}
			go func() {
				// The client never sends more; only the server can end
				// this. The client's own deadline stops a test whose
				// server never would.
				conn.SetReadDeadline(time.Now().Add(time.Minute))
				_, err := io.Copy(io.Discard, conn)
				results <- result{name, err}
			}()
		}
	}
	for range each * len(clients) {
		r := <-results
		var ne net.Error
		if errors.As(r.err, &ne) && ne.Timeout() {
			t.Fatalf("%s: the server kept the connection open for a minute", r.client)
		}
	}
}

// TestSlowAnswersAreNotCut checks that the read deadline, once the
// request is read, neither fails nor cancels a handler that takes longer
// than it to answer, with and without a body.
func TestSlowAnswersAreNotCut(t *testing.T) {
	addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case <-r.Context().Done():
			http.Error(w, "cancelled: "+context.Cause(r.Context()).Error(), http.StatusInternalServerError)
		case <-time.After(3 * short.Read):
			fmt.Fprintf(w, "answered %d", len(body))
		}
	}))
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		t.Run(method, func(t *testing.T) {
			var body io.Reader
			want := "answered 0"
			if method == http.MethodPost {
				body, want = strings.NewReader("{}"), "answered 2"
			}
			req, err := http.NewRequest(method, "http://"+addr, body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || string(got) != want {
				t.Errorf("answer %d %q, want 200 %q", resp.StatusCode, got, want)
			}
		})
	}
}

// TestKeptAliveConnectionsServeAgain checks that lifting the read
// deadline for one request leaves the next request on the connection its
// own deadlines.
func TestKeptAliveConnectionsServeAgain(t *testing.T) {
	addr := start(t, echo)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	for i := range 3 {
		if _, err := io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != "3" {
			t.Fatalf("request %d answered %q", i, got)
		}
	}
	// The next request trickles: it is cut as a first one would be.
	if _, err := io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(r, nil)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("a trickled request on a kept-alive connection answered %d", resp.StatusCode)
		}
	} else if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server kept a trickling kept-alive connection open for a minute")
	}
}
