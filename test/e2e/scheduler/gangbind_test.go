package scheduler

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// testGangBindingRefused pins that when the API server refuses the last
// member's binding, the whole gang is rolled back: while the refusal
// lasts no member is bound, no GPUAllocation is written, tessera-scheduler
// holds no GPU for the gang and the accounting is exact; once bindings
// are allowed, the whole gang is placed.
func testGangBindingRefused(ctx context.Context, t *testing.T, e *env) {
	e.addNode(ctx, t, "gang-bind", "gang-bind", 10, t4())
	allow := e.cp.RefuseBindings(ctx, t, "bind-2")
	g := e.createGang(ctx, t, "bind", "gang-bind", 3, 4000)
	framework.WaitFor(t, 60*time.Second, "bind-2's binding to be refused", func() (bool, string) {
		events := e.events(ctx, "bind-2")
		return strings.Contains(events, "are refused"), "events: " + events
	})
	// The gang is tried again with back-off meanwhile (1 s doubling to
	// 10 s); every try is rolled back before any pod is bound.
	if n := e.countAllocationCreates(ctx, t, g.pods, 5*time.Second); n > 0 {
		t.Errorf("%d GPUAllocations of the gang were written in 5 s while a member's binding is refused, want none", n)
	}
	if b := e.bound(ctx, t, g.pods); len(b) > 0 {
		t.Errorf("pods %v of the gang were bound while a member's binding is refused", b)
	}
	if n := e.allocations(ctx, t, g.pods); n > 0 {
		t.Errorf("%d GPUAllocations of the gang are left while a member's binding is refused", n)
	}
	e.waitHeldMiB(t, "gang-bind", 0)
	e.checkNoOvercommit(ctx, t)
	t.Logf("bind-0's events while bind-2's binding is refused: %s", e.events(ctx, "bind-0"))
	allow()
	for _, name := range g.pods {
		e.waitBound(ctx, t, name)
	}
	e.waitHeldMiB(t, "gang-bind", 3*4000)
	e.deleteGang(ctx, t, g)
}

// testGangRestart pins that a tessera-scheduler started again while a gang
// is partly bound rebuilds exact books and places the rest of the gang:
// three pods of a PodGroup whose minCount is 3 are bound, and a fourth,
// whose binding is refused, joins it.
func testGangRestart(ctx context.Context, t *testing.T, e *env) {
	e.addNode(ctx, t, "gang-restart", "gang-restart", 10, t4())
	g := e.createGang(ctx, t, "restart", "gang-restart", 3, 3000)
	for _, name := range g.pods {
		e.waitBound(ctx, t, name)
	}
	allow := e.cp.RefuseBindings(ctx, t, "restart-3")
	last := gangPod("restart-3", "gang-restart", g.name, 3000)
	e.createPod(ctx, t, last)
	g.pods = append(g.pods, last.Name)
	framework.WaitFor(t, 60*time.Second, "restart-3's binding to be refused", func() (bool, string) {
		events := e.events(ctx, last.Name)
		return strings.Contains(events, "are refused"), "events: " + events
	})
	e.restartScheduler(t)
	allow()
	for _, name := range g.pods {
		e.waitBound(ctx, t, name)
	}
	e.waitHeldMiB(t, "gang-restart", 4*3000)
}

// countAllocationCreates counts the GPUAllocations of the named pods
// created in the next span.
func (e *env) countAllocationCreates(ctx context.Context, t *testing.T, names []string, span time.Duration) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, span)
	defer cancel()
	w, err := e.cp.Tessera.GpuV1alpha1().GPUAllocations(namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	n := 0
	for ev := range w.ResultChan() {
		if a, ok := ev.Object.(*gpuv1alpha1.GPUAllocation); ok && ev.Type == watch.Added && slices.Contains(names, a.Name) {
			n++
		}
	}
	return n
}
