package view

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// TestArrangingChangesNothingButMemory applies the same random changes to
// two views and reads one of them, with a Lookup kept throughout, in random
// orders, so that it is arranged again and again: after every step both
// views must hold the same nodes, devices, usage and pods. Nodes gain
// devices too, which an arranged node must not take from its neighbour.
func TestArrangingChangesNothingButMemory(t *testing.T) {
	names := []string{"n0", "n1", "n2", "n3", "n4"}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 13))
		read, twin := New(), New()
		var l Lookup
		for step := range 100 {
			node := names[rng.IntN(len(names))]
			pod := types.UID(fmt.Sprintf("pod%d", rng.IntN(8)))
			c := containers(int64(1+rng.IntN(8))*1000, int32(rng.IntN(5))*10, fmt.Sprintf("%s-gpu%d", node, rng.IntN(2)))
			a := allocation(string(pod), types.UID(fmt.Sprintf("a%d", step)), pod, node, c)
			gpus := 1 + rng.IntN(3)
			change := rng.IntN(5)
			for _, v := range []*View{read, twin} {
				switch change {
				case 0:
					v.SetGPUNode(gpuNode(node, gpus))
				case 1:
					v.DeleteGPUNode(node)
				case 2, 3:
					v.Place(a)
				case 4:
					v.Release(pod)
				}
			}
			list := slices.Clone(names[:rng.IntN(len(names)+1)])
			rng.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
			read.ReadWith(&l, list, "", func(string, *Node) {})
			if diff := cmp.Diff(dump(twin), dump(read)); diff != "" {
				t.Fatalf("seed %d step %d: the view read in the order %v differs (-never read +read):\n%s", seed, step, list, diff)
			}
		}
	}
}

// nodeDump is what the view knows of a node, without its memory's addresses.
type nodeDump struct {
	Name       string
	HasGPUNode bool
	NotReady   string
	Devices    string
	Pods       []types.UID
}

func dump(v *View) map[string]nodeDump {
	v.mu.RLock()
	defer v.mu.RUnlock()
	out := map[string]nodeDump{}
	for name, n := range v.nodes {
		out[name] = nodeDump{
			Name: n.Placement.Name, HasGPUNode: n.HasGPUNode, NotReady: n.NotReady,
			Devices: fmt.Sprintf("%+v", n.Placement.Devices),
			Pods:    slices.Sorted(maps.Keys(n.pods)),
		}
	}
	return out
}

// TestReadArrangesNodesInItsOrder makes nodes in one order and reads them
// with a Lookup in another: the second read must find them one after
// another in memory, in the order read, with their devices likewise.
func TestReadArrangesNodesInItsOrder(t *testing.T) {
	v := New()
	var names []string
	for i := range 100 {
		names = append(names, fmt.Sprintf("node-%03d", i))
		v.SetGPUNode(gpuNode(names[i], 2))
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	var l Lookup
	v.ReadWith(&l, names, "", func(string, *Node) {})
	var nodes []*Node
	v.ReadWith(&l, names, "", func(_ string, n *Node) { nodes = append(nodes, n) })
	for i := 1; i < len(nodes); i++ {
		prev, n := nodes[i-1], nodes[i]
		if uintptr(unsafe.Pointer(n)) != uintptr(unsafe.Pointer(prev))+unsafe.Sizeof(*prev) {
			t.Fatalf("node %s does not follow node %s in memory", n.Placement.Name, prev.Placement.Name)
		}
		prevDevices := prev.Placement.Devices
		end := uintptr(unsafe.Pointer(unsafe.SliceData(prevDevices))) + uintptr(len(prevDevices))*unsafe.Sizeof(prevDevices[0])
		if uintptr(unsafe.Pointer(unsafe.SliceData(n.Placement.Devices))) != end {
			t.Fatalf("the devices of node %s do not follow those of node %s", n.Placement.Name, prev.Placement.Name)
		}
		if n.Placement.Name != names[i] {
			t.Fatalf("read %s as the node %s", names[i], n.Placement.Name)
		}
	}
}
