package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParse(t *testing.T) {
	file := writeConfig(t, "nodeName: from-file\nsplitCount: 4\nmemoryScaling: 1.5\nheartbeatPeriod: 30s\n")
	tests := []struct {
		name      string
		args      []string
		env       string
		node      string
		split     int32
		scaling   float64
		heartbeat time.Duration
	}{
		{name: "defaults with the node from the environment", env: "from-env", node: "from-env", split: 10, scaling: 1, heartbeat: 15 * time.Second},
		{name: "flags", args: []string{"--node-name=n1", "--split-count=3"}, node: "n1", split: 3, scaling: 1, heartbeat: 15 * time.Second},
		{name: "file", args: []string{"--config=" + file}, node: "from-file", split: 4, scaling: 1.5, heartbeat: 30 * time.Second},
		{name: "flags override the file, whatever their order", args: []string{"--split-count=7", "--config=" + file, "--heartbeat-period=1s"}, node: "from-file", split: 7, scaling: 1.5, heartbeat: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("NODE_NAME", tt.env)
			o, err := Parse("test", tt.args)
			if err != nil {
				t.Fatal(err)
			}
			c := o.Config
			if c.NodeName != tt.node || c.SplitCount != tt.split || c.MemoryScaling != tt.scaling || c.HeartbeatPeriod.Duration != tt.heartbeat {
				t.Errorf("got node %q split %d scaling %v heartbeat %v", c.NodeName, c.SplitCount, c.MemoryScaling, c.HeartbeatPeriod.Duration)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "missing config file", args: []string{"--config=/nonexistent/tessera.yaml"}, want: "/nonexistent/tessera.yaml"},
		{name: "misspelt setting in the file", args: []string{"--config=" + writeConfig(t, "splitCont: 3\n")}, want: `unknown field "splitCont"`},
		{name: "unknown flag", args: []string{"--split=3"}, want: "unknown flag: --split"},
		{name: "stray argument", args: []string{"extra"}, want: `unexpected arguments ["extra"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("test", tt.args)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
