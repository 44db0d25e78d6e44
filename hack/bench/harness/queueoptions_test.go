package harness

import (
	"slices"
	"strings"
	"testing"
)

func TestQueueOptions(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantNodes int
		wantErr   string
	}{
		{name: "queue mode runs the extender on 20 nodes by default", args: []string{"--mode=queue"}, wantNodes: queueNodes},
		{name: "queue mode keeps the nodes asked for", args: []string{"--mode=queue", "--nodes=50"}, wantNodes: 50},
		{name: "queue mode ignores --pods", args: []string{"--mode=queue", "--pods=100000"}, wantNodes: queueNodes},
		{name: "no Jobs", args: []string{"--mode=queue", "--jobs=0"}, wantErr: "--jobs=0: must be from 1 to 10000"},
		{name: "Jobs of no pods", args: []string{"--mode=queue", "--pods-per-job=0"}, wantErr: "--pods-per-job=0: must be from 1 to 64"},
		{name: "Jobs that do no work", args: []string{"--mode=queue", "--job-duration=10ms"}, wantErr: "--job-duration=10ms: must be at least 1s"},
		{name: "a stall no longer than a Job's work would stop a Job at work",
			args: []string{"--mode=queue", "--job-duration=30s", "--stall=30s"}, wantErr: "--stall=30s: must be more than --job-duration=30s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := completedOptions(t, tt.args)
			err := o.Validate()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Validate = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if !slices.Equal(o.Rows, []string{RowTessera}) || o.Nodes != tt.wantNodes {
				t.Errorf("rows %v on %d nodes, want row c on %d", o.Rows, o.Nodes, tt.wantNodes)
			}
		})
	}
}
