package framework

import (
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// WarningRecorder keeps the warnings the API server sends a client, as
// kubectl prints them.
type WarningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

var _ rest.WarningHandler = (*WarningRecorder)(nil)

// HandleWarningHeader keeps a warning of code 299, the only code the API
// server sends.
func (r *WarningRecorder) HandleWarningHeader(code int, _ string, text string) {
	if code != 299 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, text)
}

// Take returns the warnings kept since the last Take.
func (r *WarningRecorder) Take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.warnings
	r.warnings = nil
	return w
}

// ClientWithWarnings is an admin client whose warnings land in the
// recorder.
func (cp *ControlPlane) ClientWithWarnings(t testing.TB) (kubernetes.Interface, *WarningRecorder) {
	t.Helper()
	rec := &WarningRecorder{}
	cfg := rest.CopyConfig(cp.Config)
	cfg.WarningHandler = rec
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kube, rec
}
