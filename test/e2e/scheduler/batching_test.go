package scheduler

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tessera-gpu/tessera/test/framework"
)

// TestPluginBatching places a burst of identical slice pods that fills
// four nodes' GPUs exactly, with kube-scheduler's opportunistic batching
// carrying each pod's filtered and scored nodes over to the next: most
// pods go where batching pointed, every pod that fits is placed, the
// pods that do not fit wait, and no GPU is over-committed.
func TestPluginBatching(t *testing.T) {
	e := startPluginEnv(t)
	ctx := t.Context()
	const (
		group = "batching"
		nodes = 4
		// Five 16000 MiB slices with 20% of the cores fill one 80 GiB
		// GPU; each node has two.
		fit  = nodes * 2 * 5
		pods = fit + 3
	)
	for i := range nodes {
		e.addNode(ctx, t, fmt.Sprintf("batching-%d", i), group, 10, a100(0), a100(0))
	}
	slice := ctr{name: "main", count: 1, memory: 16000, core: 20}
	var wg sync.WaitGroup
	for i := range pods {
		wg.Go(func() {
			pod := gpuPod(fmt.Sprintf("batching-%02d", i), group, nil, slice)
			if _, err := e.cp.Kube.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Errorf("creating %s: %v", pod.Name, err)
			}
		})
	}
	wg.Wait()
	bound := waitBoundOf(ctx, t, e, group, fit)
	// The pods left over stay unplaced: no GPU had room for them.
	time.Sleep(3 * time.Second)
	if now := boundOf(ctx, t, e, group); now != fit {
		t.Errorf("%d pods bound, want the %d that fit", now, fit)
	}
	t.Logf("%d of %d pods bound", bound, pods)
	e.checkNoOvercommit(ctx, t)
	e.checkOneInFlight(t)
	hinted := batchHintsUsed(ctx, t, e)
	t.Logf("%d pods placed where opportunistic batching pointed", hinted)
	// Each node's first pod is scored afresh; most of the others can go
	// where batching pointed.
	if hinted < fit/2 {
		t.Errorf("%d pods placed where batching pointed, want at least %d: is batching off?", hinted, fit/2)
	}
}

// waitBoundOf waits until want of the group's pods are bound, and
// returns how many are.
func waitBoundOf(ctx context.Context, t *testing.T, e *env, group string, want int) int {
	t.Helper()
	var n int
	framework.WaitFor(t, 2*time.Minute, fmt.Sprintf("%d pods to be bound", want), func() (bool, string) {
		n = boundOf(ctx, t, e, group)
		return n >= want, fmt.Sprintf("%d bound", n)
	})
	return n
}

// boundOf counts the group's bound pods.
func boundOf(ctx context.Context, t *testing.T, e *env, group string) int {
	t.Helper()
	list, err := e.cp.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	n := 0
	for _, p := range list.Items {
		if p.Spec.NodeSelector[groupLabel] == group && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// batchHintsUsed reads from tessera-scheduler's metrics how many pods it
// placed on the node opportunistic batching carried over from the pod
// before.
func batchHintsUsed(ctx context.Context, t *testing.T, e *env) int {
	t.Helper()
	client, err := framework.NewSchedulerClient(e.cp, e.scheduler.Pid())
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, client.Base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Client.Do(req)
	if err != nil {
		t.Fatalf("reading tessera-scheduler's metrics: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading tessera-scheduler's metrics: %v", err)
	}
	want := fmt.Sprintf(`scheduler_batch_attempts_total{profile=%q,result="hint_used"} `, schedulerName)
	for s := bufio.NewScanner(bytes.NewReader(body)); s.Scan(); {
		if v, ok := strings.CutPrefix(s.Text(), want); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s%s: %v", want, v, err)
			}
			return int(n)
		}
	}
	return 0
}
