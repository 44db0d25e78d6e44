package framework

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is one control-plane binary running for a test.
type Process struct {
	name    string
	logFile string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
	once    sync.Once

	// MetricsAddress is where tessera-scheduler's Tessera plugin serves
	// its metrics, when its configuration has a listener (see
	// StartSchedulerBinaryProcess); empty otherwise.
	MetricsAddress string
}

// StartProcess runs bin with args, logging to dir/name.log. The process
// is killed if the calling process dies.
func StartProcess(dir, bin, name string, args ...string) (*Process, error) {
	return StartProcessWithEnv(dir, bin, name, nil, args...)
}

// StartProcessWithEnv is StartProcess with env (KEY=value) added to this
// process's environment.
func StartProcessWithEnv(dir, bin, name string, env []string, args ...string) (*Process, error) {
	logFile := filepath.Join(dir, name+".log")
	f, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group, so that a test killed mid-way does not leave
	// the child to an unrelated signal, and Stop reaches only it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{name: name, logFile: logFile, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

// Stop ends the process: SIGTERM, then SIGKILL after ten seconds.
func (p *Process) Stop() {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
}

// Pid returns the process's ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// LogLines returns the last n lines of the process's log that contain
// substr.
func (p *Process) LogLines(substr string, n int) []string {
	b, err := os.ReadFile(p.logFile)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for line := range bytes.Lines(b) {
		if bytes.Contains(line, []byte(substr)) {
			out = append(out, string(bytes.TrimSuffix(line, []byte("\n"))))
		}
	}
	return out[max(0, len(out)-n):]
}

// LogTail returns the last n bytes of the process's log.
func (p *Process) LogTail(n int) string {
	b, err := os.ReadFile(p.logFile)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// stopOnCleanup stops p when the test ends and, if the test failed, logs
// the end of p's output.
func stopOnCleanup(t testing.TB, p *Process) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last lines of %s (%s):\n%s", p.name, p.logFile, p.LogTail(4000))
		}
		p.Stop()
	})
}

// Kill ends the process at once with SIGKILL, as a crash or the kernel's
// out-of-memory killer would, and waits for it.
func (p *Process) Kill() {
	p.once.Do(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
}
