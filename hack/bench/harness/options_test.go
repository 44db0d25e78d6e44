package harness

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(o *Options)
		wantErr string
	}{
		{name: "defaults are valid", mutate: func(*Options) {}},
		{name: "scale mode is valid", mutate: func(o *Options) { o.Mode = ModeScale; o.Nodes = 5000; o.Pods = 40000 }},
		{name: "unknown mode", mutate: func(o *Options) { o.Mode = "fast" }, wantErr: `--mode="fast": must be throughput, scale, writes, backlog, queue or gangs`},
		{name: "backlog mode is valid", mutate: func(o *Options) { o.Mode = ModeBacklog; o.Rows = AllBacklogRows() }},
		{name: "backlog mode ignores --pods", mutate: func(o *Options) { o.Mode = ModeBacklog; o.Rows = AllBacklogRows(); o.Nodes = 50 }},
		{name: "backlog mode runs no row a", mutate: func(o *Options) { o.Mode = ModeBacklog; o.Rows = []string{"a", "c"} },
			wantErr: `--rows=a,c: backlog mode runs rows c, d, e and f only, not "a"`},
		{name: "backlog mode needs pods to end", mutate: func(o *Options) { o.Mode = ModeBacklog; o.Rows = AllBacklogRows(); o.FinishRate = 0 },
			wantErr: "--finish-rate=0: must be above 0 and at most 1000"},
		{name: "backlog mode ends at most 1000 pods a second", mutate: func(o *Options) { o.Mode = ModeBacklog; o.Rows = AllBacklogRows(); o.FinishRate = 1001 },
			wantErr: "--finish-rate=1001: must be above 0 and at most 1000"},
		{name: "backlog mode runs for a second at least", mutate: func(o *Options) {
			o.Mode = ModeBacklog
			o.Rows = AllBacklogRows()
			o.BacklogDuration = time.Millisecond
		},
			wantErr: "--backlog-duration=1ms: must be at least 1s"},
		{name: "backlog mode warms up for a second at least", mutate: func(o *Options) { o.Mode = ModeBacklog; o.Rows = AllBacklogRows(); o.BacklogWarmup = 0 },
			wantErr: "--backlog-warmup=0s: must be at least 1s"},
		{name: "no nodes", mutate: func(o *Options) { o.Nodes = 0 }, wantErr: "--nodes=0: must be from 1 to 20000"},
		{name: "too many GPUs per node", mutate: func(o *Options) { o.GPUsPerNode = 17 }, wantErr: "--gpus-per-node=17: must be from 4 to 16"},
		{name: "too few GPUs per node for the 4-GPU shapes", mutate: func(o *Options) { o.GPUsPerNode = 2 }, wantErr: "--gpus-per-node=2: must be from 4 to 16"},
		{name: "split over the limit", mutate: func(o *Options) { o.Split = 101 }, wantErr: "--split=101: must be from 1 to 100"},
		{name: "more pods than shares", mutate: func(o *Options) { o.Nodes = 1; o.Pods = 81 }, wantErr: "--pods=81: must be at most --nodes × --gpus-per-node × --split = 80"},
		{name: "unknown row", mutate: func(o *Options) { o.Rows = []string{"a", "g"} }, wantErr: `--rows=a,g: unknown row "g"`},
		{name: "row f outside backlog mode", mutate: func(o *Options) { o.Rows = []string{"a", "f"} }, wantErr: `--rows=a,f: row f runs in backlog mode only`},
		{name: "plugin and DRA rows are valid", mutate: func(o *Options) { o.Rows = []string{"d", "e"} }},
		{name: "pinned control plane is valid on 2 CPUs", mutate: func(o *Options) { o.PinControlPlane = true }},
		{name: "row named twice", mutate: func(o *Options) { o.Rows = []string{"b", "b"} }, wantErr: `row "b" is named twice`},
		{name: "no rows", mutate: func(o *Options) { o.Rows = nil }, wantErr: "--rows is empty"},
		{name: "profiles without a directory", mutate: func(o *Options) { o.ProfileSeconds = 30 }, wantErr: "--profile-seconds=30: must be 0, or positive with --dir"},
		{name: "negative profile time", mutate: func(o *Options) { o.ProfileSeconds = -1; o.Dir = "/tmp/x" }, wantErr: "--profile-seconds=-1: must be 0"},
		{name: "profiles into a directory", mutate: func(o *Options) { o.ProfileSeconds = 30; o.Dir = "/tmp/x" }},
		{name: "zero timeout", mutate: func(o *Options) { o.Timeout = 0 }, wantErr: "--timeout=0s: must be positive"},
		{name: "negative timeout", mutate: func(o *Options) { o.Timeout = -time.Second }, wantErr: "--timeout=-1s"},
		{name: "extender environment without a value", mutate: func(o *Options) { o.ExtenderEnv = []string{"GOMEMLIMIT"} }, wantErr: `--extender-env="GOMEMLIMIT": must be KEY=VALUE`},
		{name: "kube-apiserver environment without a key", mutate: func(o *Options) { o.APIServerEnv = []string{"=400"} }, wantErr: `--apiserver-env="=400": must be KEY=VALUE`},
		{name: "extender environment is valid", mutate: func(o *Options) { o.ExtenderEnv = []string{"GOMEMLIMIT=350MiB", "GOGC=50"} }},
		{name: "no workers", mutate: func(o *Options) { o.Workers = 0 }, wantErr: "--workers=0: must be from 1 to 256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			tt.mutate(o)
			err := o.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestCompleteGivesBacklogModeItsRows(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantRows []string
	}{
		{name: "throughput keeps every row", args: nil, wantRows: AllRows()},
		{name: "backlog runs c, d and e by default", args: []string{"--mode=backlog"}, wantRows: AllBacklogRows()},
		{name: "backlog keeps the rows asked for", args: []string{"--mode=backlog", "--rows=d"}, wantRows: []string{"d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := completedOptions(t, tt.args)
			if !slices.Equal(o.Rows, tt.wantRows) {
				t.Errorf("rows %v, want %v", o.Rows, tt.wantRows)
			}
		})
	}
}

func TestOptionsMix(t *testing.T) {
	tests := []struct {
		name     string
		oneShape bool
		want     int
	}{
		{name: "the default mix has every shape", want: len(DefaultMix())},
		{name: "--one-shape has the mix's first shape alone", oneShape: true, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			o.OneShape = tt.oneShape
			shapes := map[string]bool{}
			for _, s := range o.Mix().Sequence(100) {
				shapes[s.Name] = true
			}
			if len(shapes) != tt.want {
				t.Errorf("%d shapes in the workload, want %d", len(shapes), tt.want)
			}
			if !shapes[DefaultMix()[0].Name] {
				t.Errorf("the workload lacks the mix's first shape %q", DefaultMix()[0].Name)
			}
		})
	}
}
