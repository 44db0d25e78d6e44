package meter

import (
	"os"
	"testing"
	"time"
)

func TestCPUUsageSinceAndString(t *testing.T) {
	before := CPUUsage{"kube-apiserver": 2 * time.Second, "etcd": time.Second}
	after := CPUUsage{"kube-apiserver": 5 * time.Second, "etcd": 1500 * time.Millisecond, "kube-scheduler": 4 * time.Second}
	got := after.Since(before)
	want := "kube-scheduler 4.0 s, kube-apiserver 3.0 s, etcd 0.5 s, total 7.5 s"
	if got.String() != want {
		t.Errorf("since = %q, want %q (a process started in between counts from zero)", got.String(), want)
	}
}

func TestProcessCPUReadsThisProcess(t *testing.T) {
	// Burn a little CPU so the count is above zero.
	deadline := time.Now().Add(50 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	got, err := ProcessCPU(os.Getpid())
	if err != nil || got <= 0 {
		t.Fatalf("processCPU(self) = %v, %v; want a positive time", got, err)
	}
	if usage := SampleCPU("/nonexistent-dir-for-bench-test"); len(usage) != 1 || usage["bench"] <= 0 {
		t.Errorf("sampleCPU of no control plane = %v, want only the bench itself", usage)
	}
}
