package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu/nvmlgpu/nvmlfake"
)

// TestRunPrintsWhatTheBackendFound runs the check against go-nvml's mock
// of a node with one GPU in MIG mode and one not.
func TestRunPrintsWhatTheBackendFound(t *testing.T) {
	node, err := nvmlfake.New(gpus.A100_SXM4_40GB, gpus.A100_SXM4_40GB)
	if err != nil {
		t.Fatal(err)
	}
	node.SetMIG(0, nvmlfake.MIGInstance{UUID: "MIG-x", GPUInstanceID: 1, GPUSlices: 3, ComputeSlices: 3, MemoryMB: 19968})
	node.SetMemoryUsed(1, 1<<30)
	var out bytes.Buffer
	if err := run(t.Context(), &out, node, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"driver " + nvmlfake.DriverVersion + ", 2 devices",
		"device MIG-x: index 0",
		"MIG instance of " + node.UUID(0) + ": profile 3g.20gb",
		"device " + node.UUID(1) + ": index 1",
		"usage " + node.UUID(1) + ": 1024 of 40960 MiB used",
		"0 health events; discovery, usage and the health watch work",
		"dynamic MIG: GPU " + node.UUID(0) + " is in MIG mode but has 1 instances, which may be in use; not touching it",
		"dynamic MIG: SKIPPED: every GPU in MIG mode has instances",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRunMakesAndDestroysAMIGInstance runs the check against go-nvml's
// mock of a GPU in MIG mode with no instances, which serves nothing
// without dynamic MIG, and of one not in MIG mode, where the MIG check
// says that it skips.
func TestRunMakesAndDestroysAMIGInstance(t *testing.T) {
	tests := []struct {
		name          string
		migMode       bool
		want, wantErr string
	}{
		{"a GPU in MIG mode with no instances", true, "made and destroyed an instance on GPU", "discovery found no GPU that serves without dynamic MIG"},
		{"no GPU in MIG mode", false, "dynamic MIG: SKIPPED: no GPU is in MIG mode", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node, err := nvmlfake.New(gpus.A100_SXM4_40GB)
			if err != nil {
				t.Fatal(err)
			}
			if tt.migMode {
				node.SetDynamicMIG(0, false)
			}
			var out bytes.Buffer
			err = run(t.Context(), &out, node, time.Millisecond)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("run: %v, want error %q", err, tt.wantErr)
			}
			if !strings.Contains(out.String(), tt.want) || node.MIGInstanceCount(0) != 0 {
				t.Errorf("output lacks %q, or %d instances are left:\n%s", tt.want, node.MIGInstanceCount(0), out.String())
			}
		})
	}
}

func TestRunSaysWhenTheDriverIsMissing(t *testing.T) {
	node, err := nvmlfake.New(gpus.A100_SXM4_40GB)
	if err != nil {
		t.Fatal(err)
	}
	node.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	err = run(t.Context(), &bytes.Buffer{}, node, time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "libnvidia-ml.so.1") {
		t.Errorf("run without a driver: %v, want the missing library named", err)
	}
}
