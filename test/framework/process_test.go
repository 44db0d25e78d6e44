package framework

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLogLines checks that LogLines returns the last lines naming what is
// asked for, without their line ends.
func TestLogLines(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.log")
	log := "a pod=\"default/x\" 1\nb pod=\"default/y\" 2\nc pod=\"default/x\" 3\nd pod=\"default/x\" 4"
	if err := os.WriteFile(file, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &Process{logFile: file}
	got := p.LogLines(`default/x"`, 2)
	if want := []string{`c pod="default/x" 3`, `d pod="default/x" 4`}; !slices.Equal(got, want) {
		t.Errorf("LogLines = %q, want %q", got, want)
	}
}
