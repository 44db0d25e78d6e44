package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/tessera-gpu/tessera/test/framework"
)

// draExamples are the pods of deploy/examples/dra.
var draExamples = []string{"memory-slice", "memory-and-cores", "exclusive", "two-gpus", "a100-only", "numa-aligned", "hami-style",
	"binpack-1", "binpack-2", "spread-1", "spread-2"}

// TestLocalUpDRA runs "hack/local-up.sh --mode=dra --exit-after-demo" and
// checks the table it prints: every DRA example runs where tessera-scheduler
// allocated its claim, with the limits its CDI devices carry, the binpack
// and spread examples on the nodes extender mode gives them, and nothing
// is left running afterwards.
func TestLocalUpDRA(t *testing.T) {
	output := runDemo(t, "--mode=dra")

	rows := placementRows(t, output)
	checkListed(t, rows)
	checkCPUOnly(t, output)
	checkNodePolicies(t, rows)
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

// TestLocalUpDRAStock runs DRA mode with stock kube-scheduler
// (--scheduler=stock), which places every example, with no regard to
// the node policies.
func TestLocalUpDRAStock(t *testing.T) {
	output := runDemo(t, "--mode=dra", "--scheduler=stock")
	if !strings.Contains(output, "Starting stock kube-scheduler") {
		t.Error("local-up did not say it started stock kube-scheduler")
	}
	checkListed(t, placementRows(t, output))
	checkCPUOnly(t, output)
	checkNothingLeft(t, framework.RepoRoot())
}

// checkListed checks that the table lists a GPU for every DRA example.
func checkListed(t *testing.T, rows map[string][]placementRow) {
	t.Helper()
	for _, name := range draExamples {
		if len(rows[name]) == 0 {
			t.Errorf("the table lists no GPU of example %s", name)
		}
	}
}

// checkCPUOnly checks the table's line for deploy/examples/cpu-only.yaml,
// a pod that asks for no GPU: the cluster's default-scheduler placed it,
// and it runs.
func checkCPUOnly(t *testing.T, output string) {
	t.Helper()
	for _, line := range strings.Split(output, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "cpu-only" {
			if f[1] != "Running" || !strings.HasPrefix(f[2], "gpu-") || !strings.Contains(line, "placed by default-scheduler") {
				t.Errorf("the pod that asks for no GPU is not running where default-scheduler placed it: %s", line)
			}
			return
		}
	}
	t.Error("the table has no line for cpu-only, the pod that asks for no GPU")
}

// checkNodePolicies checks where deploy/examples/binpack.yaml and
// spread.yaml, which DRA mode applies after the examples before them in
// file order, landed: as in extender mode (TestLocalUp), both binpack pods
// on the busiest node, gpu-a100, which a100-only already uses, and both
// spread pods on the emptiest, gpu-l4, with the most GPU memory and
// compute free. Stock kube-scheduler scores the three nodes alike and
// picks one at random for each pod.
func checkNodePolicies(t *testing.T, rows map[string][]placementRow) {
	t.Helper()
	for pod, want := range map[string]string{"binpack-1": "gpu-a100", "binpack-2": "gpu-a100", "spread-1": "gpu-l4", "spread-2": "gpu-l4"} {
		if r := rows[pod]; len(r) == 1 && r[0].node != want {
			t.Errorf("%s landed on %s, want %s", pod, r[0].node, want)
		}
	}
}

// placementRow is one GPU of one container in the table local-up prints.
type placementRow struct{ node, gpu, model, memory, cores, env string }

// placementRows reads the table local-up prints, in either mode, by pod:
// the lines from its header to the first empty line, so that the API's
// warnings logged beside it are not taken for rows; a pod that is not
// Running fails the test.
func placementRows(t *testing.T, output string) map[string][]placementRow {
	t.Helper()
	rows := map[string][]placementRow{}
	inTable := false
	for _, line := range strings.Split(output, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "POD":
			inTable = true
			continue
		case len(f) == 0:
			inTable = false
		}
		if !inTable || len(f) < 10 || f[3] == "-" { // no container holds a GPU
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
