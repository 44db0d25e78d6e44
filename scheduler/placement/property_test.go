package placement

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// TestFitProperties checks Fit against a brute-force search over thousands of
// small random nodes and pods: every placement keeps each phase of the pod
// within every GPU's free capacity, its Holds keep the node within capacity,
// a refusal happens only when no placement exists, and Unresolvable is set
// exactly when an empty node would refuse too. One Fitter decides every
// trial, and must answer as Fit and a fresh Fitter do whatever it decided
// before.
func TestFitProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 14))
	const trials = 20000
	fits, unresolvable, searched := 0, 0, 0
	var ft Fitter
	for trial := range trials {
		n := randomNode(r, 1+r.IntN(5), true)
		req := randomRequest(r, n, 3)
		name := fmt.Sprintf("trial %d", trial)
		if e := (engine{}); e.place(n, req, true) && e.steps > 0 {
			searched++ // greedy missed a placement the search found
		}

		got, failure := Fit(n, req)
		exists := bruteForce(n, req)
		var f Failure
		if feasible := ft.Feasible(n, req, &f); feasible != (failure == nil) || (failure != nil && f != *failure) {
			t.Fatalf("%s: Feasible() = %v, %+v; Fit failure %+v", name, feasible, f, failure)
		}
		if failure == nil {
			fits++
			choice := positions(t, n, got)
			if err := checkPlacement(n, req, choice); err != nil {
				t.Fatalf("%s: Fit placed %v on %+v: %v\nrequest %+v", name, choice, n.Devices, err, req)
			}
			after := clone(n)
			after.Add(Holds(got))
			if err := withinCapacity(after); err != nil {
				t.Fatalf("%s: holds of %v over-commit: %v", name, choice, err)
			}
			if l, ok := ft.Load(n, req); !ok || l < 0 || l > 1 {
				t.Fatalf("%s: Load() = %v, %v; want a fitting load in 0..1", name, l, ok)
			} else if fresh, _ := new(Fitter).Load(n, req); l != fresh {
				t.Fatalf("%s: Load() = %v after other trials, %v fresh", name, l, fresh)
			}
			continue
		}
		if exists {
			t.Fatalf("%s: Fit refused (%v) but a placement exists\nnode %+v\nrequest %+v", name, failure, n.Devices, req)
		}
		if failure.Detail == DetailSearchLimit {
			t.Fatalf("%s: search limit reached on a small instance", name)
		}
		var sum int32
		for _, c := range failure.Counts {
			sum += c
		}
		total := len(n.Devices)
		if failure.Selected {
			// Only the GPUs the pod selected are accounted for.
			total = 0
			for _, d := range n.Devices {
				if equalAnyFold(d.UUID, req.Selection.UUIDs) {
					total++
				}
			}
		}
		if sum+failure.Fit != failure.Total || int(failure.Total) != total {
			t.Fatalf("%s: failure %+v does not account for %d GPUs", name, failure, len(n.Devices))
		}
		emptyFits := bruteForce(emptied(n), req)
		if failure.Unresolvable == emptyFits {
			t.Fatalf("%s: Unresolvable = %v, but an empty node fits: %v\nnode %+v\nrequest %+v", name, failure.Unresolvable, emptyFits, n.Devices, req)
		}
		if failure.Unresolvable {
			unresolvable++
		}
	}
	t.Logf("%d trials: %d fit, %d refused (%d unresolvable), %d found by the exact search", trials, fits, trials-fits, unresolvable, searched)
	if fits < trials/5 || trials-fits < trials/5 || searched == 0 {
		t.Errorf("random cases are lopsided: %d of %d fit, %d by the exact search", fits, trials, searched)
	}
}

// TestFitNeverOverCommits fills random 8-GPU nodes with random pods, removing
// some on the way, and checks after every step that no GPU holds more
// memory, cores or shares than it has.
func TestFitNeverOverCommits(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 71))
	placed, refused, searchLimit := 0, 0, 0
	for range 300 {
		n := randomNode(r, 8, false)
		var pods [][]Hold
		for range 40 {
			if len(pods) > 0 && r.IntN(4) == 0 {
				i := r.IntN(len(pods))
				n.Remove(pods[i])
				pods = slices.Delete(pods, i, i+1)
			}
			req := randomRequest(r, n, 4)
			got, failure := Fit(n, req)
			if failure != nil {
				refused++
				if failure.Detail == DetailSearchLimit {
					searchLimit++
				}
				continue
			}
			if err := checkPlacement(n, req, positions(t, n, got)); err != nil {
				t.Fatalf("placement breaks a rule: %v", err)
			}
			holds := Holds(got)
			n.Add(holds)
			pods = append(pods, holds)
			placed++
			if err := withinCapacity(n); err != nil {
				t.Fatalf("after placing %d pods: %v", placed, err)
			}
		}
	}
	t.Logf("placed %d pods, refused %d (%d at the search limit)", placed, refused, searchLimit)
	if searchLimit > 0 {
		t.Errorf("%d placements hit the search limit on 8-GPU nodes", searchLimit)
	}
}

// randomNode draws GPUs from a few shapes, so that twins are common, with
// random health, cordons and usage within capacity (none when idle is false
// and usage is added by placing pods).
func randomNode(r *rand.Rand, gpus int, withUsage bool) *Node {
	n := &Node{Name: "random"}
	models := []string{"NVIDIA A100-SXM4-80GB", "Tesla T4", "NVIDIA H100"}
	for i := range gpus {
		d := Device{
			UUID:       fmt.Sprintf("GPU-%d", i),
			Index:      int32(i),
			Model:      models[r.IntN(len(models))],
			NUMANode:   int32(r.IntN(2)),
			MemoryMiB:  []int64{2000, 4000, 4000, 8000}[r.IntN(4)],
			Cores:      []int32{100, 100, 100, 200, 50}[r.IntN(5)],
			ShareLimit: int32(1 + r.IntN(4)),
			Healthy:    r.IntN(20) != 0,
			Cordoned:   r.IntN(20) == 0,
		}
		if withUsage && r.IntN(5) >= 2 {
			d.UsedShares = int32(r.IntN(int(d.ShareLimit) + 1))
			if d.UsedShares > 0 {
				d.UsedMemoryMiB = int64(r.IntN(int(d.MemoryMiB/250)+1)) * 250
				d.UsedCores = int32(r.IntN(int(d.Cores/10)+1)) * 10
			}
		}
		n.Devices = append(n.Devices, d)
	}
	return n
}

// randomRequest draws a pod of up to maxContainers GPU containers of every
// kind and shape, with random filters and policy.
func randomRequest(r *rand.Rand, n *Node, maxContainers int) *Request {
	kinds := []gpuv1alpha1.ContainerKind{gpuv1alpha1.ContainerApp, gpuv1alpha1.ContainerApp, gpuv1alpha1.ContainerInit, gpuv1alpha1.ContainerSidecar}
	count := 1 + r.IntN(maxContainers)
	req := &Request{GPUPolicy: []gpurequest.Policy{gpurequest.Binpack, gpurequest.Spread}[r.IntN(2)]}
	for i := range count {
		c := gpurequest.ContainerRequest{
			Name:  fmt.Sprintf("c%d", i),
			Kind:  kinds[r.IntN(len(kinds))],
			Count: int32(1 + r.IntN(min(3, len(n.Devices)))),
			Cores: []int32{0, 0, 10, 30, 50, 70, 100}[r.IntN(7)],
		}
		switch r.IntN(4) {
		case 0:
			c.MemoryPercent = []int32{25, 50, 100}[r.IntN(3)]
		case 1:
		default:
			c.MemoryMiB = []int64{250, 500, 1000, 1500, 2000}[r.IntN(5)]
		}
		req.Containers = append(req.Containers, c)
	}
	sel := &req.Selection
	if r.IntN(10) == 0 {
		sel.Types = []string{"a100"}
	}
	if r.IntN(10) == 0 {
		sel.ExcludeTypes = []string{"t4"}
	}
	if r.IntN(10) == 0 {
		sel.UUIDs = []string{fmt.Sprintf("GPU-%d", r.IntN(len(n.Devices))), fmt.Sprintf("GPU-%d", r.IntN(len(n.Devices)))}
	}
	if r.IntN(10) == 0 {
		sel.ExcludeUUIDs = []string{fmt.Sprintf("GPU-%d", r.IntN(len(n.Devices)))}
	}
	sel.NUMABind = r.IntN(5) == 0
	return req
}

// positions turns an assignment into each container's GPU positions on n.
func positions(t *testing.T, n *Node, assignment []gpuv1alpha1.ContainerAllocation) [][]int {
	t.Helper()
	out := make([][]int, len(assignment))
	for c, ca := range assignment {
		for _, da := range ca.Devices {
			g := slices.IndexFunc(n.Devices, func(d Device) bool { return d.UUID == da.UUID })
			if g < 0 || n.Devices[g].Index != da.Index {
				t.Fatalf("assignment names GPU %s/%d, not on the node", da.UUID, da.Index)
			}
			out[c] = append(out[c], g)
		}
	}
	return out
}

// bruteForce reports whether any placement of req on n exists, trying every
// set of GPUs for every container.
func bruteForce(n *Node, req *Request) bool {
	choice := make([][]int, len(req.Containers))
	var try func(c int) bool
	try = func(c int) bool {
		if c == len(req.Containers) {
			return checkPlacement(n, req, choice) == nil
		}
		var subsets func(from int, set []int) bool
		subsets = func(from int, set []int) bool {
			if len(set) == int(req.Containers[c].Count) {
				choice[c] = set
				return try(c + 1)
			}
			for g := from; g < len(n.Devices); g++ {
				if subsets(g+1, append(slices.Clip(set), g)) {
					return true
				}
			}
			return false
		}
		return subsets(0, nil)
	}
	return try(0)
}

// checkPlacement is the placement rules written out plainly, independently
// of the engine: each container's GPUs pass the filters, and in each phase
// of the pod every GPU has room for the containers on it.
func checkPlacement(n *Node, req *Request, choice [][]int) error {
	sel := req.Selection
	for c, gpus := range choice {
		cr := req.Containers[c]
		if len(gpus) != int(cr.Count) {
			return fmt.Errorf("container %d got %d GPUs, asked %d", c, len(gpus), cr.Count)
		}
		for i, g := range gpus {
			d := n.Devices[g]
			lowerModel := strings.ToLower(d.Model)
			switch {
			case slices.Contains(gpus[:i], g):
				return fmt.Errorf("container %d got GPU %d twice", c, g)
			case !d.Healthy || d.Cordoned:
				return fmt.Errorf("container %d on unhealthy or cordoned GPU %d", c, g)
			case len(sel.Types) > 0 && !slices.ContainsFunc(sel.Types, func(s string) bool { return strings.Contains(lowerModel, s) }):
				return fmt.Errorf("container %d on GPU %d of a type not asked", c, g)
			case slices.ContainsFunc(sel.ExcludeTypes, func(s string) bool { return strings.Contains(lowerModel, s) }):
				return fmt.Errorf("container %d on GPU %d of an excluded type", c, g)
			case len(sel.UUIDs) > 0 && !slices.Contains(sel.UUIDs, d.UUID), slices.Contains(sel.ExcludeUUIDs, d.UUID):
				return fmt.Errorf("container %d on GPU %d not allowed by UUID", c, g)
			case sel.NUMABind && d.NUMANode != n.Devices[gpus[0]].NUMANode:
				return fmt.Errorf("container %d spans NUMA nodes", c)
			}
		}
	}
	var phases [][]int
	var long []int
	for c, cr := range req.Containers {
		if cr.Kind == gpuv1alpha1.ContainerInit {
			var phase []int
			for k := range c {
				if req.Containers[k].Kind == gpuv1alpha1.ContainerSidecar {
					phase = append(phase, k)
				}
			}
			phases = append(phases, append(phase, c))
		} else {
			long = append(long, c)
		}
	}
	phases = append(phases, long)
	for _, phase := range phases {
		for g := range n.Devices {
			d := n.Devices[g]
			var users []int
			for _, c := range phase {
				if slices.Contains(choice[c], g) {
					users = append(users, c)
				}
			}
			memory, cores, zero := d.UsedMemoryMiB, d.UsedCores, false
			for _, c := range users {
				cr := req.Containers[c]
				memory += cr.MemoryOn(d.MemoryMiB)
				if cr.Cores == 100 || (d.Cores > 0 && cr.Cores == d.Cores) {
					if len(users) > 1 || d.UsedShares > 0 || d.UsedMemoryMiB > 0 || d.UsedCores > 0 {
						return fmt.Errorf("exclusive container %d not alone on GPU %d", c, g)
					}
					cores += d.Cores
				} else {
					cores += cr.Cores
					zero = zero || cr.Cores == 0
				}
			}
			switch {
			case len(users) == 0:
			case d.UsedShares+int32(len(users)) > d.ShareLimit:
				return fmt.Errorf("phase %v over the share limit of GPU %d", phase, g)
			case memory > d.MemoryMiB:
				return fmt.Errorf("phase %v over the memory of GPU %d", phase, g)
			case cores > d.Cores, zero && cores >= d.Cores:
				return fmt.Errorf("phase %v over the cores of GPU %d", phase, g)
			}
		}
	}
	return nil
}

func withinCapacity(n *Node) error {
	for _, d := range n.Devices {
		if d.UsedMemoryMiB > d.MemoryMiB || d.UsedCores > d.Cores || d.UsedShares > d.ShareLimit {
			return fmt.Errorf("GPU %s over-committed: %+v", d.UUID, d)
		}
	}
	return nil
}

func emptied(n *Node) *Node {
	e := clone(n)
	for i := range e.Devices {
		e.Devices[i].UsedMemoryMiB, e.Devices[i].UsedCores, e.Devices[i].UsedShares = 0, 0, 0
	}
	return e
}
