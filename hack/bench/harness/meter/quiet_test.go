package meter

import (
	"os/exec"
	"testing"
	"time"
)

func TestQuietWait(t *testing.T) {
	// A share a spinning process exceeds however busy the machine is.
	q := quiet{share: 0.01, interval: 500 * time.Millisecond, max: 2 * time.Second}
	dir := t.TempDir()

	// No process mentions dir: idle after the first sample.
	waited, idle, err := q.Wait(t.Context(), dir)
	if err != nil || !idle || waited > 3*q.interval {
		t.Errorf("with nothing running: waited %s, idle %v, err %v; want idle after one sample", waited, idle, err)
	}

	// A process that spins with dir on its command line keeps it busy
	// until the wait gives up.
	spin := exec.Command("sh", "-c", "while :; do :; done", dir)
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = spin.Process.Kill(); _ = spin.Wait() }()
	for SampleCPU(dir)["sh"] == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	waited, idle, err = q.Wait(t.Context(), dir)
	if err != nil || idle || waited < q.max {
		t.Errorf("with a spinning process: waited %s, idle %v, err %v; want to give up after %s", waited, idle, err, q.max)
	}
}
