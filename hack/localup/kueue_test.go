package main

import (
	"strings"
	"testing"

	"github.com/tessera-gpu/tessera/test/framework"
)

// TestLocalUpKueue runs "hack/local-up.sh --kueue --exit-after-demo" and
// checks the Jobs table it prints: each example Job was admitted by its
// team's ClusterQueue and every pod of it placed with the slice it asked
// for; and that nothing, Kueue included, is left running afterwards.
func TestLocalUpKueue(t *testing.T) {
	output := runDemo(t, "--kueue")

	// JOB CLUSTERQUEUE POD NODE GPUS MEMORY(MiB) CORES(%)
	rows := map[string][][]string{}
	for _, line := range strings.Split(output, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && strings.HasPrefix(f[0], "team-") && strings.Contains(f[0], "/") {
			rows[f[0]] = append(rows[f[0]], f)
		}
	}
	for _, tc := range []struct {
		job, queue    string
		pods, gpus    int
		memory, cores string
	}{
		{job: "team-a/training", queue: "team-a", pods: 2, gpus: 1, memory: "20000", cores: "30"},
		{job: "team-b/inference", queue: "team-b", pods: 1, gpus: 2, memory: "20000", cores: "100"},
	} {
		got := rows[tc.job]
		if len(got) != tc.pods {
			t.Errorf("%s: %d rows, want one per pod (%d):\n%s", tc.job, len(got), tc.pods, output)
			continue
		}
		for _, f := range got {
			if len(f) != 7 || f[1] != tc.queue || f[3] == "-" || len(strings.Split(f[4], ",")) != tc.gpus || f[5] != tc.memory || f[6] != tc.cores {
				t.Errorf("%s: row %v, want admitted by %s and placed on %d GPU(s) with %s MiB and %s%%", tc.job, f, tc.queue, tc.gpus, tc.memory, tc.cores)
			}
		}
	}
	checkNothingLeft(t, framework.RepoRoot())
}
