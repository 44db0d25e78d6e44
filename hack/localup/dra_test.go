package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/tessera-gpu/tessera/test/framework"
)

// TestLocalUpDRA runs "hack/local-up.sh --mode=dra --exit-after-demo" and
// checks the table it prints: every DRA example runs where kube-scheduler
// allocated its claim, with the limits its CDI devices carry, and nothing
// is left running afterwards.
func TestLocalUpDRA(t *testing.T) {
	output := runDemo(t, "--mode=dra")

	rows := placementRows(t, output)
	for _, name := range []string{"memory-slice", "memory-and-cores", "exclusive", "two-gpus", "a100-only", "numa-aligned", "hami-style"} {
		if len(rows[name]) == 0 {
			t.Errorf("the table lists no GPU of example %s", name)
		}
	}
	if r := rows["memory-and-cores"]; len(r) == 1 && (r[0].memory != "8192" || !strings.Contains(r[0].env, "CUDA_DEVICE_SM_LIMIT=30") ||
		!strings.Contains(r[0].env, "CUDA_DEVICE_MEMORY_LIMIT_0=8192m") || !strings.Contains(r[0].env, "NVIDIA_VISIBLE_DEVICES="+r[0].gpu)) {
		t.Errorf("memory-and-cores: %+v", r[0])
	}
	if r := rows["exclusive"]; len(r) == 1 && (r[0].cores != "100" || !strings.Contains(r[0].env, "CUDA_DEVICE_MEMORY_LIMIT_0="+r[0].memory+"m")) {
		t.Errorf("exclusive does not hold its GPU's memory and compute: %+v", r[0])
	}
	for _, name := range []string{"two-gpus", "numa-aligned"} {
		r := rows[name]
		if len(r) != 2 || r[0].gpu == r[1].gpu || !strings.Contains(r[0].env, "NVIDIA_VISIBLE_DEVICES="+r[0].gpu+","+r[1].gpu) {
			t.Errorf("%s did not get two distinct GPUs in its visible devices' order: %+v", name, r)
		}
	}
	checkHAMiStyle(t, rows["hami-style"])
	if r := rows["a100-only"]; len(r) == 1 && !strings.HasPrefix(r[0].model, "NVIDIA A100") {
		t.Errorf("a100-only landed on a %s", r[0].model)
	}
	checkNothingLeft(t, framework.RepoRoot())
}

// placementRow is one GPU of one container in the table local-up prints.
type placementRow struct{ node, gpu, model, memory, cores, env string }

// placementRows reads the table local-up prints, in either mode, by pod;
// a pod that is not Running fails the test.
func placementRows(t *testing.T, output string) map[string][]placementRow {
	t.Helper()
	rows := map[string][]placementRow{}
	for _, line := range strings.Split(output, "\n") {
		f := strings.Fields(line)
		if len(f) < 10 || f[0] == "POD" || strings.HasPrefix(line, ">>>") {
			continue
		}
		if f[1] != "Running" {
			t.Errorf("example %s is %s: %s", f[0], f[1], line)
			continue
		}
		// POD PHASE NODE CONTAINER GPU (UUID) MODEL... MEMORY CORES ENV...
		envStart := slices.IndexFunc(f, func(s string) bool { return strings.HasPrefix(s, "CUDA_") || strings.HasPrefix(s, "NVIDIA_") })
		if envStart < 8 {
			t.Errorf("no container limits in %q", line)
			continue
		}
		rows[f[0]] = append(rows[f[0]], placementRow{node: f[2], gpu: strings.Trim(f[5], "()"), model: strings.Join(f[6:envStart-2], " "),
			memory: f[envStart-2], cores: f[envStart-1], env: strings.Join(f[envStart:], " ")})
	}
	return rows
}

// checkHAMiStyle checks the pod written for HAMi (deploy/examples/
// hami-style.yaml), which both modes apply unchanged and must place
// alike: two distinct A100s with 20000 MiB and 30% of each, in its
// container's limits in the order of its visible devices.
func checkHAMiStyle(t *testing.T, r []placementRow) {
	t.Helper()
	if len(r) != 2 || r[0].gpu == r[1].gpu || !strings.Contains(r[0].env, "NVIDIA_VISIBLE_DEVICES="+r[0].gpu+","+r[1].gpu) {
		t.Errorf("hami-style did not get two distinct GPUs in its visible devices' order: %+v", r)
		return
	}
	for _, g := range r {
		if !strings.HasPrefix(g.model, "NVIDIA A100") || g.memory != "20000" || g.cores != "30" ||
			!strings.Contains(g.env, "CUDA_DEVICE_MEMORY_LIMIT_0=20000m") || !strings.Contains(g.env, "CUDA_DEVICE_MEMORY_LIMIT_1=20000m") ||
			!strings.Contains(g.env, "CUDA_DEVICE_SM_LIMIT=30") {
			t.Errorf("hami-style: %+v, want A100s with 20000 MiB and 30 cores each in its limits", g)
		}
	}
}
