package scale

import (
	"math"
	"math/rand/v2"
	"slices"
)

// schedulerParallelism is kube-scheduler's default parallelism: the
// goroutines its filter runs over the nodes, in chunks.
const schedulerParallelism = 16

// schedulerOrders returns count lists of the nodes, each in an order that
// kube-scheduler's filter may hand them to an extender in. It checks its
// nodes in chunks (of min(√n, n ÷ parallelism) nodes), each worker taking
// the next chunk when done with one, and appends each node that passes to
// one shared list as it finds it. With cpus workers running at once,
// their chunks are interleaved node by node, differently on every call.
// A filter that remembered the order of the call before would find it
// the same only in a benchmark that sent one list over and over.
func schedulerOrders(nodes []string, cpus, count int, rng *rand.Rand) [][]string {
	chunk := max(1, min(int(math.Sqrt(float64(len(nodes)))), len(nodes)/schedulerParallelism))
	var chunks [][]string
	for start := 0; start < len(nodes); start += chunk {
		chunks = append(chunks, nodes[start:min(start+chunk, len(nodes))])
	}
	orders := make([][]string, count)
	for i := range orders {
		order := make([]string, 0, len(nodes))
		running := make([][]string, 0, cpus)
		next := 0
		for {
			// Idle workers take the next chunks.
			running = slices.DeleteFunc(running, func(c []string) bool { return len(c) == 0 })
			for len(running) < cpus && next < len(chunks) {
				running = append(running, chunks[next])
				next++
			}
			if len(running) == 0 {
				break
			}
			w := rng.IntN(len(running))
			order = append(order, running[w][0])
			running[w] = running[w][1:]
		}
		orders[i] = order
	}
	return orders
}

// keepOrder returns, for each list, its names that are in keep, in the
// list's order: kube-scheduler asks prioritize about the nodes filter
// kept, in the order it asked filter.
func keepOrder(lists [][]string, keep []string) [][]string {
	set := make(map[string]bool, len(keep))
	for _, name := range keep {
		set[name] = true
	}
	out := make([][]string, len(lists))
	for i, list := range lists {
		out[i] = slices.DeleteFunc(slices.Clone(list), func(name string) bool { return !set[name] })
	}
	return out
}
