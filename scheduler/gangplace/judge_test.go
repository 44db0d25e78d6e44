package gangplace

import (
	"testing"
)

func TestJudge(t *testing.T) {
	nodes := []node{{"busy", []int64{8000}}, {"a", []int64{0, 0}}, {"b", []int64{0, 0}}}
	tests := []struct {
		name string
		on   []string
		asks bool
		want Effect
	}{
		{name: "packed on one node, filling its GPUs", on: []string{"a", "a", "a", "a"}, asks: true,
			want: Effect{Pods: 4, Nodes: 1, Fragments: 0}},
		{name: "per pod, the busy node first: two nodes, a hole left on the second", on: []string{"busy", "a", "a", "a"}, asks: true,
			want: Effect{Pods: 4, Nodes: 2, Fragments: -1 + 1}},
		{name: "spread over the empty nodes: four fragments", on: []string{"a", "b", "a", "b"}, asks: true,
			want: Effect{Pods: 4, Nodes: 2, Fragments: 4}},
		{name: "pods that ask for no GPUs count as placed, with their nodes", on: []string{"a", "b"},
			want: Effect{Pods: 2, Nodes: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reqs := gang(t, len(tc.on), 8000)
			members := make([]Member, len(tc.on))
			for i, name := range tc.on {
				members[i].Node = name
				if tc.asks {
					members[i].Request = reqs[i]
				}
			}
			if got := Judge(cluster(nodes...), members); got != tc.want {
				t.Errorf("Judge = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestEffectScore(t *testing.T) {
	tests := []struct {
		name          string
		better, worse Effect
	}{
		{name: "more pods placed, on however many nodes", better: Effect{Pods: 5, Nodes: 5, Fragments: 5}, worse: Effect{Pods: 4, Nodes: 1}},
		{name: "fewer nodes, however many fragments", better: Effect{Pods: 4, Nodes: 1, Fragments: 4}, worse: Effect{Pods: 4, Nodes: 2, Fragments: -4}},
		{name: "fewer new fragments", better: Effect{Pods: 4, Nodes: 2, Fragments: -1}, worse: Effect{Pods: 4, Nodes: 2, Fragments: 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.better.Score() <= tc.worse.Score() {
				t.Errorf("%+v scores %d, not above %+v's %d", tc.better, tc.better.Score(), tc.worse, tc.worse.Score())
			}
		})
	}
}
