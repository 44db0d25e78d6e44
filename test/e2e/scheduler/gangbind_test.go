package scheduler

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// testGangBindingRefused pins that when the API server refuses one
// member's binding, the members bound stay bound (Kubernetes v1.37 cannot
// unbind them), the refused member backs off instead of writing a
// GPUAllocation many times a second, gives back exactly what it took, and
// is placed once its binding is allowed.
func testGangBindingRefused(ctx context.Context, t *testing.T, e *env) {
	e.addNode(ctx, t, "gang-bind", "gang-bind", 10, t4())
	allow := e.cp.RefuseBindings(ctx, t, "bind-1")
	g := e.createGang(ctx, t, "bind", "gang-bind", 2, 4000)
	e.waitBound(ctx, t, "bind-0")
	// kube-scheduler retries a gang member whose binding failed at once,
	// and every try writes a GPUAllocation and deletes it again; Tessera
	// backs the member off (1 s doubling to 10 s) instead.
	if n := e.countAllocationCreates(ctx, t, "bind-1", 5*time.Second); n > 5 {
		t.Errorf("bind-1's GPUAllocation was created %d times in 5 s while its binding is refused, want 5 at most", n)
	} else {
		t.Logf("bind-1's GPUAllocation was created %d times in 5 s while its binding is refused", n)
	}
	if b := e.bound(ctx, t, []string{"bind-1"}); len(b) > 0 {
		t.Fatalf("bind-1 was bound while its binding is refused")
	}
	allow()
	for _, name := range g.pods {
		e.waitBound(ctx, t, name)
	}
	e.waitHeldMiB(t, "gang-bind", 2*4000)
}

// testGangRestart pins that a tessera-scheduler started again while a gang
// is partly bound rebuilds exact books and places the rest of the gang.
func testGangRestart(ctx context.Context, t *testing.T, e *env) {
	e.addNode(ctx, t, "gang-restart", "gang-restart", 10, t4())
	allow := e.cp.RefuseBindings(ctx, t, "restart-3")
	g := e.createGang(ctx, t, "restart", "gang-restart", 4, 3000)
	for _, name := range g.pods[:3] {
		e.waitBound(ctx, t, name)
	}
	e.restartScheduler(t)
	allow()
	for _, name := range g.pods {
		e.waitBound(ctx, t, name)
	}
	e.waitHeldMiB(t, "gang-restart", 4*3000)
}

// countAllocationCreates counts the GPUAllocations named name created in
// the next span.
func (e *env) countAllocationCreates(ctx context.Context, t *testing.T, name string, span time.Duration) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, span)
	defer cancel()
	w, err := e.cp.Tessera.GpuV1alpha1().GPUAllocations(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	n := 0
	for ev := range w.ResultChan() {
		if ev.Type == watch.Added {
			n++
		}
	}
	return n
}
