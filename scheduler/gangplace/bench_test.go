package gangplace

import (
	"fmt"
	"testing"

	"github.com/tessera-gpu/tessera/internal/cputime"
)

// BenchmarkCandidates measures GeneratePlacements' search for a gang of
// 1 GPU × 8000 MiB pods on nodes of 8 GPUs of 16,000 MiB: with every
// node empty, so that each node takes 16 of the gang's pods (the most
// placements), and with nine in ten nodes holding 12,000 MiB on every
// GPU, so that only every tenth node holds any of the gang. cpu-ns/op
// is its CPU time, which a busy machine does not inflate.
func BenchmarkCandidates(b *testing.B) {
	for _, full := range []int{0, 9} {
		for _, size := range []int{8, 32} {
			b.Run(fmt.Sprintf("nodes=1000/full=%d0%%/pods=%d", full, size), func(b *testing.B) {
				spec := make([]node, 1000)
				for i := range spec {
					used := int64(0)
					if i%10 < full {
						used = 12000
					}
					spec[i] = node{name: fmt.Sprintf("node-%05d", i), used: []int64{used, used, used, used, used, used, used, used}}
				}
				v, names, reqs := cluster(spec...), nodeNames(spec), gang(b, size, 8000)
				defer cputime.Report(b, cputime.Thread)()
				for b.Loop() {
					if sets := Candidates(v, names, reqs, every, 3); len(sets) == 0 {
						b.Fatal("no candidates")
					}
				}
			})
		}
	}
}
