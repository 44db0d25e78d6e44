package health

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Names of the plugin's checks.
const (
	// Registration: the plugin serves its socket and is registered with
	// the kubelet.
	Registration = "kubelet-registration"
	// Discovery: NVML (or the simulated backend) started and listed GPUs.
	Discovery = "gpu-discovery"
	// GPUs: the node has at least one GPU to offer.
	GPUs = "gpus"
	// HealthWatch: GPU health events are being watched.
	HealthWatch = "gpu-health-watch"
)

// Checks are named checks, each passing or failing with a reason. The zero
// value is not usable; call New.
type Checks struct {
	mu     sync.Mutex
	checks map[string]check
}

type check struct {
	err error
	// live: the check's failure fails liveness too, since a restart of
	// the plugin can mend it.
	live bool
}

// New returns checks with none set: all pass until a part sets its own.
func New() *Checks { return &Checks{checks: map[string]check{}} }

// Set records the result of a check: err nil passes it. live says whether
// its failure fails liveness.
func (c *Checks) Set(name string, live bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checks[name] = check{err: err, live: live}
}

// Live reports the failing checks that fail liveness, nil when none does.
func (c *Checks) Live() error { return c.failing(true) }

// Ready reports every failing check, nil when none fails.
func (c *Checks) Ready() error { return c.failing(false) }

// failing joins the failing checks (only the live ones when onlyLive) in
// name order.
func (c *Checks) failing(onlyLive bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var names []string
	for name, ch := range c.checks {
		if ch.err != nil && (ch.live || !onlyLive) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var errs []error
	for _, name := range names {
		errs = append(errs, fmt.Errorf("%s: %w", name, c.checks[name].err))
	}
	return errors.Join(errs...)
}

// Handler answers 200 "ok" while report returns nil, and 500 with the
// failing checks, one a line, when it does not.
func Handler(report func() error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if err := report(); err != nil {
			var b strings.Builder
			for _, line := range strings.Split(err.Error(), "\n") {
				b.WriteString("[-] " + line + "\n")
			}
			http.Error(w, strings.TrimSuffix(b.String(), "\n"), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
}
