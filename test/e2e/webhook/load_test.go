package webhook

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/webhook/admission"
	"github.com/tessera-gpu/tessera/webhook/app"
)

// hamiPod is a pod written for HAMi: a GPU with memoryMiB of its memory
// and 30% of its compute.
func hamiPod(name string, memoryMiB int) *corev1.Pod {
	return gpuPod(name, "nvidia.com/gpu", "1", "nvidia.com/gpumem", strconv.Itoa(memoryMiB), "nvidia.com/gpucores", "30")
}

// creations creates the pods, at most clients at a time, and returns the
// error of each pod refused, by name.
func creations(ctx context.Context, cp *framework.ControlPlane, clients int, pods <-chan *corev1.Pod) map[string]error {
	var (
		mu      sync.Mutex
		refused = map[string]error{}
		wg      sync.WaitGroup
	)
	for range clients {
		wg.Go(func() {
			for p := range pods {
				if _, err := cp.Kube.CoreV1().Pods(workNamespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					mu.Lock()
					refused[p.Name] = err
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return refused
}

// TestDRAAdmissionUnderLoad creates HAMi-style pods through the webhook in
// DRA mode, registered as shipped (failurePolicy Fail, a 5 s timeout),
// many at once and then at a steady rate: every pod must be admitted, as
// admission reads the templates from memory and creates each shape once
// rather than calling the API server for every pod through a rate-limited
// client.
func TestDRAAdmissionUnderLoad(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cp := framework.Start(t, framework.Options{})
	createNamespace(ctx, t, cp.Kube, workNamespace, nil)
	opts := app.NewOptions()
	opts.TLSMode = app.TLSModeSelfManaged
	opts.Namespace = webhookNamespace
	opts.IPAddresses = []string{"127.0.0.1"}
	opts.Admission.Mode = admission.ModeDRA
	w := startWebhook(t, cp, opts)
	installShipped(ctx, t, cp.Kube, w.base, nil)
	w.waitReady(ctx, t)
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var p *corev1.Pod
		p, last = cp.Kube.CoreV1().Pods(workNamespace).Create(ctx, hamiPod("probe", 1000), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last == nil && len(p.Spec.ResourceClaims) == 1, nil
	})
	if err != nil {
		t.Fatalf("the API server never got a pod turned into claims through the webhook: %v", last)
	}
	shapes := sets.New[int]()

	t.Run("100 pods from 64 clients at once are all admitted", func(t *testing.T) {
		const pods, clients = 100, 64
		queue := make(chan *corev1.Pod, pods)
		for i := range pods {
			// Ten shapes, each new to the namespace, so that pods of one
			// shape are admitted while its template is being created.
			memory := 1000 * (1 + i%10)
			shapes.Insert(memory)
			queue <- hamiPod(fmt.Sprintf("burst-%d", i), memory)
		}
		close(queue)
		if refused := creations(ctx, cp, clients, queue); len(refused) > 0 {
			t.Errorf("%d of %d pods refused, among them: %v", len(refused), pods, first(refused))
		}
	})

	t.Run("pods at 20 a second for 10 s are all admitted", func(t *testing.T) {
		const pods, perSecond = 200, 20
		queue := make(chan *corev1.Pod)
		var refused map[string]error
		done := make(chan struct{})
		go func() { defer close(done); refused = creations(ctx, cp, pods, queue) }()
		tick := time.NewTicker(time.Second / perSecond)
		for i := range pods {
			<-tick.C
			// A new shape every tenth pod.
			memory := 20000 + 100*(i/10)
			shapes.Insert(memory)
			queue <- hamiPod(fmt.Sprintf("steady-%d", i), memory)
		}
		tick.Stop()
		close(queue)
		<-done
		if len(refused) > 0 {
			t.Errorf("%d of %d pods refused, among them: %v", len(refused), pods, first(refused))
		}
	})

	t.Run("each shape has one template, and every pod's claim names it", func(t *testing.T) {
		templates, err := cp.Kube.ResourceV1().ResourceClaimTemplates(workNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		names := sets.New[string]()
		for _, tmpl := range templates.Items {
			names.Insert(tmpl.Name)
		}
		if names.Len() != shapes.Len() {
			t.Errorf("%d templates for %d shapes", names.Len(), shapes.Len())
		}
		list, err := cp.Kube.CoreV1().Pods(workNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Items {
			if len(p.Spec.ResourceClaims) != 1 || p.Spec.ResourceClaims[0].ResourceClaimTemplateName == nil || !names.Has(*p.Spec.ResourceClaims[0].ResourceClaimTemplateName) {
				t.Errorf("pod %s has claims %+v, not one from an existing template", p.Name, p.Spec.ResourceClaims)
			}
		}
	})
}

// first returns one refusal to show, with its pod.
func first(refused map[string]error) string {
	for name, err := range refused {
		return name + ": " + err.Error()
	}
	return ""
}
