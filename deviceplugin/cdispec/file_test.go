package cdispec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/klog/v2/ktesting"
	cdispecs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/tessera-gpu/tessera/test/framework"
)

func claimSpec(device string) *cdispecs.Spec {
	return &cdispecs.Spec{
		Version: "0.5.0",
		Kind:    "tessera.dev/claim",
		Devices: []cdispecs.Device{{Name: device, ContainerEdits: cdispecs.ContainerEdits{Env: []string{"A=1"}}}},
	}
}

func TestWriteFileWritesWhatTheRuntimeReads(t *testing.T) {
	for _, name := range []string{"tessera.dev-claim_x.json", "tessera.dev-claim_x.yaml"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := WriteFile(dir, name, claimSpec("x")); err != nil {
				t.Fatal(err)
			}
			if got := framework.CDIRuntimeView(t, dir).ListDevices(); !slices.Equal(got, []string{"tessera.dev/claim=x"}) {
				t.Errorf("the runtime sees %v, want the one device", got)
			}
			if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode().Perm() != 0o644 {
				t.Errorf("spec file %v, %v; want it readable by all", fi, err)
			}
			if got := framework.FileNames(t, dir); !slices.Equal(got, []string{name}) {
				t.Errorf("directory holds %v, want the spec alone", got)
			}
		})
	}
}

func TestWriteFileRefusingASpecKeepsTheOldOne(t *testing.T) {
	dir := t.TempDir()
	name := "tessera.dev-claim_x.json"
	if err := WriteFile(dir, name, claimSpec("x")); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, name))
	err := WriteFile(dir, name, claimSpec("not/a/name"))
	if err == nil || !strings.Contains(err.Error(), name) {
		t.Fatalf("an invalid device name: %v, want an error naming the spec", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, name)); string(after) != string(before) {
		t.Errorf("the refused write changed the spec to %s", after)
	}
	if got := framework.FileNames(t, dir); !slices.Equal(got, []string{name}) {
		t.Errorf("directory holds %v after a refused write, want the old spec alone", got)
	}
	if err := WriteFile(dir, "tessera.dev-claim_x.txt", claimSpec("x")); err == nil || !strings.Contains(err.Error(), ".json or .yaml") {
		t.Errorf("a name with no spec extension: %v, want an error naming the extensions", err)
	}
}

func TestWriteRemovesTheLeftoverOfAWriteThatDidNotFinish(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	dir := t.TempDir()
	// The daemon was killed between writing the temporary file and
	// renaming it. Another writer's temporary file is not its to remove.
	for _, name := range []string{fileName + ".1582305329.tmp", "spec.123.tmp"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("---\ncdiVer"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := (Writer{Dir: dir}).Write(ctx, inventory("GPU-a")); err != nil {
		t.Fatal(err)
	}
	if got, want := framework.FileNames(t, dir), []string{"spec.123.tmp", fileName}; !slices.Equal(got, want) {
		t.Errorf("directory holds %v, want %v", got, want)
	}
}
