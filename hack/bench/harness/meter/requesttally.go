package meter

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// RequestTally counts the requests a client sends, in all and by verb
// and resource as RequestCount keys them, read from each request's URL.
type RequestTally struct {
	total atomic.Int64
	mu    sync.Mutex
	kinds map[string]int
}

// NewRequestTally is an empty tally.
func NewRequestTally() *RequestTally { return &RequestTally{kinds: map[string]int{}} }

// Add counts one request.
func (t *RequestTally) Add(r *http.Request) {
	t.total.Add(1)
	kind := requestKind(r)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.kinds[kind]++
}

// Load is how many requests were sent so far.
func (t *RequestTally) Load() int64 { return t.total.Load() }

// Count is what was sent so far.
func (t *RequestTally) Count() RequestCount {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := RequestCount{ByKind: make(map[string]int, len(t.kinds))}
	for k, v := range t.kinds {
		c.ByKind[k] = v
		c.Total += v
	}
	return c
}

// Since is what was sent from before to c.
func (c RequestCount) Since(before RequestCount) RequestCount {
	out := RequestCount{Total: c.Total - before.Total, ByKind: map[string]int{}}
	for k, v := range c.ByKind {
		if d := v - before.ByKind[k]; d > 0 {
			out.ByKind[k] = d
		}
	}
	return out
}

// requestKind is a request's method ("watch" for a GET that watches) and
// its resource, with its subresource after a slash, from a URL of the
// form /api/v1/... or /apis/group/version/..., namespaced or not.
func requestKind(r *http.Request) string {
	verb := strings.ToLower(r.Method)
	if r.URL.Query().Get("watch") == "true" {
		verb = "watch"
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) > 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) > 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return verb + " " + r.URL.Path
	}
	if len(parts) > 2 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	kind := verb + " " + parts[0]
	if len(parts) > 2 {
		kind += "/" + parts[2]
	}
	return kind
}
