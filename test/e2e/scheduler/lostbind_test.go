package scheduler

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tessera-gpu/tessera/test/framework"
)

// TestLostBindAnswerKeepsTheGPUs has the extender lose the answer to a
// pod's binding, which the API server makes a moment later (before
// kube-scheduler would try the pod again), while the extender's watch of
// GPUAllocations lags, as after an API server restart: the allocation it
// wrote is not yet in its view. The GPUs it reserved for the pod must stay
// reserved, so a second pod that fits only in their room waits, rather
// than being placed on GPUs the first pod holds. Once the first pod is
// deleted, the second is placed.
func TestLostBindAnswerKeepsTheGPUs(t *testing.T) {
	faults := &apiFaults{}
	e := startEnvWrapped(t, faults.wrap)
	// Before the extender stops, whose watches must read to end.
	t.Cleanup(func() { faults.lagAllocations(false) })
	ctx := context.Background()
	const group = "lostbind"
	e.addNode(ctx, t, "lostbind-1", group, 10, t4())
	half := ctr{name: "main", count: 1, memory: 10000}

	faults.lagAllocations(true)
	lost := faults.loseBindingAnswer("lost-first", 300*time.Millisecond)
	e.createPod(ctx, t, gpuPod("lost-first", group, nil, half))
	select {
	case <-lost:
	case <-time.After(time.Minute):
		t.Fatal("the extender did not bind pod lost-first")
	}
	framework.WaitFor(t, time.Minute, "the late binding of lost-first to be made", func() (bool, string) {
		p, err := e.cp.Kube.CoreV1().Pods(namespace).Get(ctx, "lost-first", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Spec.NodeName != "", "not bound"
	})
	e.createPod(ctx, t, gpuPod("lost-second", group, nil, half))
	e.waitFailedScheduling(ctx, t, "lost-second", "not enough memory")
	faults.lagAllocations(false)
	e.waitBound(ctx, t, "lost-first")
	e.cp.CheckGPUAccounting(ctx, t, "tessera-scheduler")

	e.deletePod(ctx, t, "lost-first")
	e.waitBound(ctx, t, "lost-second")
	e.checkOneInFlight(t)
}

// apiFaults sits between the extender and the API server. It can lose
// the answer to one pod's binding, sending the binding itself later, and
// hold back what watches of GPUAllocations bring while they lag.
type apiFaults struct {
	mu sync.Mutex
	// loseBindingOf is the pod whose next binding's answer is lost; the
	// binding goes to the API server after bindingDelay, then lost closes.
	loseBindingOf string
	bindingDelay  time.Duration
	lost          chan struct{}
	// lagging, while set, is closed when the lag ends.
	lagging chan struct{}
}

func (f *apiFaults) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if f.takeBinding(req) {
			return nil, f.sendLater(rt, req)
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
	delay, lost := f.bindingDelay, f.lost
	f.mu.Unlock()
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
