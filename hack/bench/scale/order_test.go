package scale

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSchedulerOrders(t *testing.T) {
	nodes := make([]string, 1000)
	position := map[string]int{}
	for i := range nodes {
		nodes[i] = fmt.Sprintf("node-%04d", i)
		position[nodes[i]] = i
	}
	orders := schedulerOrders(nodes, 2, 4, rand.New(rand.NewPCG(1, 2)))
	const chunk = 31 // min(√1000, 1000 ÷ 16)
	for i, order := range orders {
		if got := slices.Sorted(slices.Values(order)); !slices.Equal(got, nodes) {
			t.Fatalf("order %d is not every node once", i)
		}
		// Within a chunk, nodes come in the chunk's order; a chunk starts
		// only once all but one of the chunks before it have started.
		last := map[int]int{}
		for k, name := range order {
			p := position[name]
			if prev, ok := last[p/chunk]; ok && prev > p {
				t.Fatalf("order %d: %s after a later node of its chunk", i, name)
			}
			last[p/chunk] = p
			if started := len(last); p/chunk >= started+1 {
				t.Fatalf("order %d: %s (chunk %d) at %d, with only %d chunks started", i, name, p/chunk, k, started)
			}
		}
		if slices.Equal(order, nodes) {
			t.Errorf("order %d is the nodes' own order: two workers were not interleaved", i)
		}
		if i > 0 && slices.Equal(order, orders[i-1]) {
			t.Errorf("orders %d and %d are the same", i-1, i)
		}
	}
	if got := schedulerOrders(nodes, 1, 1, rand.New(rand.NewPCG(1, 2)))[0]; !slices.Equal(got, nodes) {
		t.Errorf("with one worker the order is not the nodes' own")
	}
}

func TestKeepOrder(t *testing.T) {
	got := keepOrder([][]string{{"c", "a", "b", "d"}, {"d", "b", "a"}}, []string{"a", "d"})
	want := [][]string{{"a", "d"}, {"d", "a"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("keepOrder = %q, want %q", got, want)
	}
}
