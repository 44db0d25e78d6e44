package framework

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ShippedExtenderURL is the extender's address in the shipped
// deploy/scheduler/kube-scheduler-config.yaml.
const ShippedExtenderURL = "http://127.0.0.1:8888"

// StartShippedScheduler runs kube-scheduler on the shipped configuration,
// its extender at extenderURL instead, until the test ends. It fails the
// test if the shipped configuration no longer names ShippedExtenderURL.
func (cp *ControlPlane) StartShippedScheduler(t testing.TB, extenderURL string) *Process {
	t.Helper()
	shipped, err := os.ReadFile(filepath.Join(RepoRoot(), "deploy", "scheduler", "kube-scheduler-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(shipped), "urlPrefix: "+ShippedExtenderURL) {
		t.Fatalf("the shipped kube-scheduler configuration no longer points at %s", ShippedExtenderURL)
	}
	return cp.StartScheduler(t, strings.ReplaceAll(string(shipped), ShippedExtenderURL, extenderURL))
}
