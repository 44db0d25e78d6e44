package view

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/internal/cputime"
	"github.com/tessera-gpu/tessera/scheduler/quota"
)

// BenchmarkHoldGang measures one gang-fit decision, which holds the view's
// write lock from start to end: a gang of 1 GPU × 20,000 MiB pods placed
// on nodes × 8 GPUs of 80,000 MiB whose GPUs each have 70,000 MiB taken,
// so that only every tenth node has room and every member is fitted
// against every node. Each op holds the gang and releases it; cpu-ns/op
// is its CPU time, which a busy machine does not inflate.
func BenchmarkHoldGang(b *testing.B) {
	for _, nodes := range []int{1000, 5000} {
		for _, size := range []int{8, 40} {
			b.Run(fmt.Sprintf("nodes=%d/pods=%d", nodes, size), func(b *testing.B) {
				v := New()
				for i := range nodes {
					name := fmt.Sprintf("node-%05d", i)
					addNode(v, name, 8)
					if i%10 == 0 {
						continue
					}
					for g := range 8 {
						uid := types.UID(fmt.Sprintf("%s-%d", name, g))
						v.Place(allocation(string(uid), uid, uid+"-pod", name, containers(70000, 0, fmt.Sprintf("%s-gpu%d", name, g))))
					}
				}
				members := make([]GangMember, size)
				for i := range members {
					members[i] = memberOf(b, 20000, gpurequest.Binpack)
				}
				at := now.Add(time.Second)
				defer cputime.Report(b, cputime.Thread)()
				for b.Loop() {
					if _, err := v.HoldGang("w/main", "ns", "w", nil, members, live, quota.Limits{}, at); err != nil {
						b.Fatal(err)
					}
					v.ReleaseGang("w/main")
				}
			})
		}
	}
}
