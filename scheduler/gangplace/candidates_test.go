package gangplace

import (
	"slices"
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/view"
)

func TestCandidates(t *testing.T) {
	tests := []struct {
		name  string
		nodes []node
		size  int
		open  func(*view.Node) bool
		want  [][]string
	}{
		{name: "one node holds the gang: the one it fills before an empty one",
			// part holds 3 of 8000 and is left full; empty is left with a
			// half-used GPU; busy holds 1.
			nodes: []node{{"busy", []int64{8000}}, {"empty", []int64{0, 0}}, {"part", []int64{8000, 0}}},
			size:  3, want: [][]string{{"part"}, {"empty"}}},
		{name: "one node holds the gang: never a spread, however empty",
			nodes: []node{{"busy", []int64{8000}}, {"a", []int64{0, 0}}, {"b", []int64{0, 0}}, {"c", []int64{0}}},
			size:  4, want: [][]string{{"a"}, {"b"}}},
		{name: "no node holds the gang: the fewest that do, and the last swapped for the tightest",
			nodes: []node{{"two-a", []int64{0}}, {"two-b", []int64{0}}, {"one", []int64{8000}}},
			size:  3, want: [][]string{{"two-a", "two-b"}, {"two-a", "one"}}},
		{name: "too little room anywhere: none",
			nodes: []node{{"a", []int64{0}}, {"b", []int64{8000}}},
			size:  4, want: nil},
		{name: "a closed node is not counted",
			nodes: []node{{"closed", []int64{0, 0}}, {"a", []int64{0}}, {"b", []int64{0}}},
			size:  4, open: func(n *view.Node) bool { return n.Placement.Name != "closed" }, want: [][]string{{"a", "b"}}},
		{name: "at most the limit",
			nodes: []node{{"a", []int64{0}}, {"b", []int64{0}}, {"c", []int64{0}}, {"d", []int64{0}}},
			size:  1, want: [][]string{{"a"}, {"b"}, {"c"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			open := tc.open
			if open == nil {
				open = every
			}
			got := Candidates(cluster(tc.nodes...), nodeNames(tc.nodes), gang(t, tc.size, 8000), open, 3)
			if !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("Candidates = %v, want %v", got, tc.want)
			}
		})
	}
}
