package extenderargs

import (
	"strings"
	"testing"
)

// TestPoisonExposesKeptNames keeps a borrowed name past Release, as a
// careless caller might, and checks that a poisoned release makes it read
// as garbage, while a name taken with Keep still reads the same.
func TestPoisonExposesKeptNames(t *testing.T) {
	a := &Args{Poison: true}
	if err := a.Read(strings.NewReader(`{"Pod":null,"NodeNames":["gpu-node-1","gpu-node-2"]}`)); err != nil {
		t.Fatal(err)
	}
	borrowed, kept := a.Names().At(1), a.Names().Keep(1)
	a.Release()
	if kept != "gpu-node-2" {
		t.Errorf("the kept name reads %q after Release, want gpu-node-2", kept)
	}
	if want := strings.Repeat(string([]byte{poisonByte}), len("gpu-node-2")); borrowed != want {
		t.Errorf("the borrowed name reads %q after a poisoned Release, want it overwritten", borrowed)
	}
	// The next call's body reuses the memory: without poison, the
	// borrowed name would now silently read the next call's node.
	if err := a.Read(strings.NewReader(`{"Pod":null,"NodeNames":["other-node-1","other-node-2"]}`)); err != nil {
		t.Fatal(err)
	}
	if got := a.Names().At(0); got != "other-node-1" {
		t.Errorf("after a poisoned Release the next call reads %q, want other-node-1", got)
	}
}
