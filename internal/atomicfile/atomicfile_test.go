package atomicfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tessera-gpu/tessera/internal/atomicfile"
	"github.com/tessera-gpu/tessera/test/framework"
)

func TestWriteReplacesTheFileAndLeavesNothingElse(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, content := range []string{"old", "new"} {
		var checked string
		check := func(tmp string) error {
			data, err := os.ReadFile(tmp)
			checked = string(data)
			return err
		}
		if err := atomicfile.Write(path, []byte(content), 0o644, check); err != nil {
			t.Fatal(err)
		}
		if checked != content {
			t.Errorf("check saw %q, want the content about to be renamed, %q", checked, content)
		}
	}
	if data, _ := os.ReadFile(path); string(data) != "new" {
		t.Errorf("file holds %q, want %q", data, "new")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("file %v, %v; want mode 0644", fi, err)
	}
	if got := framework.FileNames(t, dir); !slices.Equal(got, []string{"state.json"}) {
		t.Errorf("directory holds %v, want the file alone", got)
	}
}

func TestWriteThatFailsItsCheckKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := atomicfile.Write(path, []byte("old"), 0o600, nil); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	if err := atomicfile.Write(path, []byte("bad"), 0o600, func(string) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("Write = %v, want the check's error", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "old" {
		t.Errorf("file holds %q after a refused write, want the old content", data)
	}
	if got := framework.FileNames(t, dir); !slices.Equal(got, []string{"state.json"}) {
		t.Errorf("directory holds %v after a refused write, want the file alone", got)
	}
}

func TestRemoveStaleRemovesOnlyThisFilesUnfinishedWrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	// What a process killed before its rename leaves: the temporary file
	// Write made, under the name Write gave it, beside files that are not
	// unfinished writes of state.json.
	var left string
	_ = atomicfile.Write(path, []byte("cut short"), 0o600, func(tmp string) error {
		left = filepath.Base(tmp)
		return errors.New("killed")
	})
	others := []string{"spec.123.tmp", "state.json", "state.json.tmp", "state.jsonx.1.tmp", "other.json.1.tmp"}
	for _, name := range append([]string{left}, others...) {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := atomicfile.RemoveStale(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{left}) {
		t.Errorf("removed %v, want %v", removed, []string{left})
	}
	want := slices.Sorted(slices.Values(others))
	if got := framework.FileNames(t, dir); !slices.Equal(got, want) {
		t.Errorf("directory holds %v, want %v", got, want)
	}
	if removed, err := atomicfile.RemoveStale(filepath.Join(dir, "missing", "state.json")); err != nil || removed != nil {
		t.Errorf("in a missing directory: %v, %v; want nothing to do", removed, err)
	}
}
