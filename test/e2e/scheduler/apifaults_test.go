package scheduler

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// apiFaults sits between the extender and the API server. It can lose
// the answer to one pod's binding, sending the binding itself later or
// never, hold one pod's GPUAllocation create, and hold back what watches
// of GPUAllocations bring while they lag.
type apiFaults struct {
	mu sync.Mutex
	// loseBindingOf is the pod whose next binding's answer is lost; the
	// binding goes to the API server after bindingDelay, then lost closes.
	// With dropBinding the binding is never sent: lost closes as it
	// arrives, and its caller gets the error once answer closes.
	loseBindingOf string
	bindingDelay  time.Duration
	dropBinding   bool
	lost, answer  chan struct{}
	// holdCreateOf is the pod whose next GPUAllocation create waits, once
	// held closes, until release closes.
	holdCreateOf  string
	held, release chan struct{}
	// lagging, while set, is closed when the lag ends.
	lagging chan struct{}
}

func (f *apiFaults) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if f.takeBinding(req) {
			return nil, f.sendLater(rt, req)
		}
		if err := f.holdCreate(req); err != nil {
			return nil, err
		}
		resp, err := rt.RoundTrip(req)
		if err == nil && req.URL.Query().Get("watch") == "true" && strings.Contains(req.URL.Path, "/gpuallocations") {
			resp.Body = &laggingBody{ReadCloser: resp.Body, f: f}
		}
		return resp, err
	})
}

// loseBindingAnswer makes the next binding of pod name reach the API
// server after delay, its answer lost; the channel closes once it is sent.
func (f *apiFaults) loseBindingAnswer(name string, delay time.Duration) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loseBindingOf, f.bindingDelay, f.lost = name, delay, make(chan struct{})
	return f.lost
}

// dropBindingAnswer makes the next binding of pod name never reach the
// API server: lost closes when it arrives, and its caller gets a dropped
// connection's error when answer is called.
func (f *apiFaults) dropBindingAnswer(name string) (lost <-chan struct{}, answer func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loseBindingOf, f.dropBinding, f.lost, f.answer = name, true, make(chan struct{}), make(chan struct{})
	return f.lost, sync.OnceFunc(func() { close(f.answer) })
}

// holdAllocationCreate holds the next create of pod name's GPUAllocation:
// held closes when it arrives, and it goes on to the API server when
// release is called.
func (f *apiFaults) holdAllocationCreate(name string) (held <-chan struct{}, release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holdCreateOf, f.held, f.release = name, make(chan struct{}), make(chan struct{})
	return f.held, sync.OnceFunc(func() { close(f.release) })
}

// holdCreate waits, when req is the create to hold, until it is released.
func (f *apiFaults) holdCreate(req *http.Request) error {
	f.mu.Lock()
	name, held, release := f.holdCreateOf, f.held, f.release
	f.mu.Unlock()
	if name == "" || req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/gpuallocations") || req.Body == nil {
		return nil
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	if !strings.Contains(string(body), `"name":"`+name+`"`) {
		return nil
	}
	f.mu.Lock()
	f.holdCreateOf = ""
	f.mu.Unlock()
	close(held)
	<-release
	return nil
}

// takeBinding reports whether req is the binding whose answer is lost.
func (f *apiFaults) takeBinding(req *http.Request) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.loseBindingOf == "" || req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/pods/"+f.loseBindingOf+"/binding") {
		return false
	}
	f.loseBindingOf = ""
	return true
}

// sendLater sends the binding after the delay, on its own, and returns
// the error a dropped connection gives the caller now.
func (f *apiFaults) sendLater(rt http.RoundTripper, req *http.Request) error {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return err
	}
	late := req.Clone(context.Background())
	late.Body = io.NopCloser(bytes.NewReader(body))
	f.mu.Lock()
	delay, lost, drop, answer := f.bindingDelay, f.lost, f.dropBinding, f.answer
	f.dropBinding = false
	f.mu.Unlock()
	if drop {
		close(lost)
		<-answer
		return errors.New("connection lost before the binding's answer")
	}
	go func() {
		time.Sleep(delay)
		if resp, err := rt.RoundTrip(late); err == nil {
			resp.Body.Close()
		}
		close(lost)
	}()
	return errors.New("connection lost before the binding's answer")
}

// lagAllocations starts or ends the lag of GPUAllocation watches.
func (f *apiFaults) lagAllocations(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case on && f.lagging == nil:
		f.lagging = make(chan struct{})
	case !on && f.lagging != nil:
		close(f.lagging)
		f.lagging = nil
	}
}

// laggingBody is a watch's stream, whose data reaches the reader only
// when no lag is on.
type laggingBody struct {
	io.ReadCloser
	f *apiFaults
}

func (b *laggingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.f.mu.Lock()
	lagging := b.f.lagging
	b.f.mu.Unlock()
	if lagging != nil {
		<-lagging
	}
	return n, err
}

type roundTripper func(*http.Request) (*http.Response, error)

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return r(req) }
