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
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
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
