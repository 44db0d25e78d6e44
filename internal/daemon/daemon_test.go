package daemon

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
)

// childEnv makes the test binary run a daemon's main instead of the tests.
const childEnv = "TESSERA_DAEMON_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		logging := logsapi.NewLoggingConfiguration()
		failRun := false
		Daemon{
			Program: "tessera-test",
			Logger:  "test",
			What:    "Test daemon",
			AddFlags: func(fs *pflag.FlagSet) *logsapi.LoggingConfiguration {
				fs.BoolVar(&failRun, "fail", false, "Fail at run.")
				logsapi.AddFlags(logging, fs)
				return logging
			},
			Complete: func(fs *pflag.FlagSet) error {
				if bad, _ := fs.GetBool("fail"); bad && fs.NArg() > 0 {
					return errors.New("a bad configuration")
				}
				return nil
			},
			Run: func(context.Context) error {
				if failRun {
					return errors.New("it broke")
				}
				return nil
			},
		}.Main(append([]string{"tessera-test"}, strings.Fields(os.Getenv(childEnv))...))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestExitCodes runs the daemon's main in a child process and checks what
// it exits with and prints.
func TestExitCodes(t *testing.T) {
	tests := []struct {
		args     string
		wantCode int
		wantOut  string
	}{
		{"--version", 0, "tessera-test "},
		{"--help", 0, "--fail"},
		{"--no-such-flag", 2, "unknown flag: --no-such-flag"},
		{"--logging-format=xml", 2, `Unsupported log format`},
		{"--fail extra", 2, "Invalid configuration"},
		{"--fail", 1, "Test daemon failed"},
		{"-v=1", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.args, func(t *testing.T) {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), childEnv+"="+tc.args)
			out, err := cmd.CombinedOutput()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode || !strings.Contains(string(out), tc.wantOut) {
				t.Errorf("exit %d, want %d; output %q, want it to contain %q", code, tc.wantCode, out, tc.wantOut)
			}
		})
	}
}
