package harness

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestScaleModeRows checks which scale mode the rows pick, and the flags
// DRA scale mode checks.
func TestScaleModeRows(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantDRA bool
		wantErr string
	}{
		{name: "scale mode measures the extender by default", args: []string{"--mode=scale"}},
		{name: "--rows=c is the extender", args: []string{"--mode=scale", "--rows=c"}},
		{name: "--rows=e alone is DRA mode", args: []string{"--mode=scale", "--rows=e"}, wantDRA: true},
		{name: "row e in the throughput mode is not scale mode", args: []string{"--rows=e"}},
		{name: "DRA mode schedules at least one new pod", args: []string{"--mode=scale", "--rows=e", "--new-pods=0"}, wantDRA: true, wantErr: "--new-pods=0: must be from 1"},
		{name: "DRA mode churns claims", args: []string{"--mode=scale", "--rows=e", "--claim-churn=0"}, wantDRA: true, wantErr: "--claim-churn=0: must be above 0"},
		{name: "DRA mode runs the node daemons", args: []string{"--mode=scale", "--rows=e", "--heartbeat-period=0"}, wantDRA: true, wantErr: "--heartbeat-period=0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := completedOptions(t, tt.args)
			if got := o.ScaleDRA(); got != tt.wantDRA {
				t.Errorf("scaleDRA() = %v, want %v", got, tt.wantDRA)
			}
			err := o.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Validate() = %v, want an error with %q", err, tt.wantErr)
			}
		})
	}
}

// completedOptions are the options the command line args set, completed
// as run completes them.
func completedOptions(t *testing.T, args []string) *Options {
	t.Helper()
	o := NewOptions()
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	o.Complete(fs)
	return o
}
