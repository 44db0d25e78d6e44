package dra

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/webhook/admission"
	"github.com/tessera-gpu/tessera/webhook/app"
)

const (
	threeA100 = `
gpus:
- {uuid: GPU-a100-0, index: 0, model: NVIDIA A100-SXM4-80GB, memoryMiB: 81920, numaNode: 0}
- {uuid: GPU-a100-1, index: 1, model: NVIDIA A100-SXM4-80GB, memoryMiB: 81920, numaNode: 0}
- {uuid: GPU-a100-2, index: 2, model: NVIDIA A100-SXM4-80GB, memoryMiB: 81920, numaNode: 1}
`
	fourL4 = `
gpus:
- {uuid: GPU-l4-0, index: 0, model: NVIDIA L4, memoryMiB: 23034, numaNode: 0}
- {uuid: GPU-l4-1, index: 1, model: NVIDIA L4, memoryMiB: 23034, numaNode: 0}
- {uuid: GPU-l4-2, index: 2, model: NVIDIA L4, memoryMiB: 23034, numaNode: 1}
- {uuid: GPU-l4-3, index: 3, model: NVIDIA L4, memoryMiB: 23034, numaNode: 1}
`
)

// hamiPod is a pod as written for HAMi: GPU resources and HAMi's
// annotations, no claim.
func hamiPod(name string, annotations map[string]string, limits ...string) *corev1.Pod {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(limits); i += 2 {
		l[corev1.ResourceName(limits[i])] = resource.MustParse(limits[i+1])
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault, Annotations: annotations},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "cuda", Image: "cuda", Resources: corev1.ResourceRequirements{Limits: l},
		}}},
	}
}

// TestHAMiPodRunsUnchangedOnDRANodes runs a pod written for HAMi (a count,
// gpumem, gpucores and nvidia.com/use-gputype) through the webhook in DRA
// mode, stock kube-scheduler and the node daemon's DRA driver. It must get
// what extender mode gives it: two distinct GPUs of the asked type, and
// in its container HAMi-core's limits for 20000 MiB and 30% of each, in
// the order of its visible devices. Its claim is owned by the pod and goes
// with it; a pod of the same shape shares the template; a request DRA
// cannot express is refused at creation, naming the field and the limit.
func TestHAMiPodRunsUnchangedOnDRANodes(t *testing.T) {
	c := startCluster(t, &simNode{name: "a100", gpus: threeA100}, &simNode{name: "l4", gpus: fourL4})
	c.startWebhook()

	hami := func(name string) *corev1.Pod {
		return hamiPod(name, map[string]string{"nvidia.com/use-gputype": "A100"},
			"nvidia.com/gpu", "2", "nvidia.com/gpumem", "20000", "nvidia.com/gpucores", "30")
	}
	first := c.waitRunningCreated(hami("hami-1"))
	if first.Spec.NodeName != "a100" {
		t.Errorf("the pod asking for A100s runs on %s", first.Spec.NodeName)
	}
	for name := range first.Spec.Containers[0].Resources.Limits {
		if strings.HasPrefix(string(name), "nvidia.com/") {
			t.Errorf("the running pod still asks for %s", name)
		}
	}
	env := strings.Join(c.containerEnv(first)["cuda"], " ")
	visible := visibleDevices(c.containerEnv(first)["cuda"])
	gpus := strings.Split(visible, ",")
	if len(gpus) != 2 || gpus[0] == gpus[1] || !strings.HasPrefix(gpus[0], "GPU-a100-") || !strings.HasPrefix(gpus[1], "GPU-a100-") {
		t.Errorf("visible devices %q, want two distinct A100s", visible)
	}
	for _, want := range []string{"CUDA_DEVICE_MEMORY_LIMIT_0=20000m", "CUDA_DEVICE_MEMORY_LIMIT_1=20000m", "CUDA_DEVICE_SM_LIMIT=30"} {
		if !strings.Contains(env, want) {
			t.Errorf("container env %s lacks %s", env, want)
		}
	}
	if len(first.Status.ResourceClaimStatuses) != 1 || first.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
		t.Fatalf("claim statuses %+v, want the pod's one claim", first.Status.ResourceClaimStatuses)
	}
	claimName := *first.Status.ResourceClaimStatuses[0].ResourceClaimName
	claim, err := c.cp.Kube.ResourceV1().ResourceClaims(metav1.NamespaceDefault).Get(c.ctx, claimName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if owner := metav1.GetControllerOf(claim); owner == nil || owner.UID != first.UID {
		t.Errorf("claim %s is controlled by %+v, want the pod", claimName, owner)
	}

	// Same shape, same template; the other way round, the L4s.
	second := c.waitRunningCreated(hami("hami-2"))
	notA100 := c.waitRunningCreated(hamiPod("not-a100", map[string]string{"nvidia.com/nouse-gputype": "A100"}, "nvidia.com/gpumem", "4000"))
	if second.Spec.NodeName != "a100" || notA100.Spec.NodeName != "l4" {
		t.Errorf("hami-2 runs on %s, not-a100 on %s", second.Spec.NodeName, notA100.Spec.NodeName)
	}
	templates, err := c.cp.Kube.ResourceV1().ResourceClaimTemplates(metav1.NamespaceDefault).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(templates.Items) != 2 {
		t.Errorf("%d templates for two request shapes", len(templates.Items))
	}

	// A percentage and exclusive use depend on the GPU they land on: the
	// claim lists one subrequest per kind of GPU the webhook saw in the
	// GPUNodes, and kube-scheduler takes the one that fits.
	percent := c.waitRunningCreated(hamiPod("quarter-l4", map[string]string{"nvidia.com/use-gputype": "L4"}, "nvidia.com/gpumem-percentage", "25"))
	exclusive := c.waitRunningCreated(hamiPod("own-l4", map[string]string{"nvidia.com/use-gputype": "L4"}, "nvidia.com/gpumem", "1000", "nvidia.com/gpucores", "100"))
	for pod, want := range map[*corev1.Pod][]string{
		percent:   {"CUDA_DEVICE_MEMORY_LIMIT_0=5758m"},
		exclusive: {"CUDA_DEVICE_MEMORY_LIMIT_0=1000m", "CUDA_DEVICE_SM_LIMIT=100"},
	} {
		env := strings.Join(c.containerEnv(pod)["cuda"], " ")
		for _, w := range want {
			if pod.Spec.NodeName != "l4" || !strings.Contains(env, w) {
				t.Errorf("pod %s on %s has env %s, want %s", pod.Name, pod.Spec.NodeName, env, w)
			}
		}
	}
	c.createPod(hamiPod("shares-l4-gpu", map[string]string{"tessera.dev/gpu-uuid": visibleDevices(c.containerEnv(exclusive)["cuda"])}, "nvidia.com/gpumem", "1000"))
	c.waitUnschedulable("shares-l4-gpu", "a pod asking for the exclusive pod's GPU to be unschedulable")

	if err := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Delete(c.ctx, "hami-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(t, time.Minute, "the deleted pod's claim to go", func() (bool, string) {
		_, err := c.cp.Kube.ResourceV1().ResourceClaims(metav1.NamespaceDefault).Get(c.ctx, claimName, metav1.GetOptions{})
		return err != nil, fmt.Sprintf("claim %s: %v", claimName, err)
	})

	_, err = c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Create(c.ctx, hamiPod("too-many", nil, "nvidia.com/gpu", "40"), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "spec.containers[0].resources.limits[nvidia.com/gpu]") || !strings.Contains(err.Error(), "must be at most 32 in DRA mode") {
		t.Errorf("creating a pod asking for 40 GPUs: %v, want a refusal naming the field and the limit", err)
	}
}

// startWebhook runs the admission webhook in DRA mode for the rest of the
// test, registered through the shipped configurations.
func (c *cluster) startWebhook() {
	c.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	mutating, validating, err := framework.InstallWebhookConfigurations(c.ctx, c.cp.Kube, framework.RepoRoot()+"/deploy/webhook", "https://"+ln.Addr().String())
	if err != nil {
		c.t.Fatal(err)
	}
	opts := app.NewOptions()
	opts.ListenAddress = ln.Addr().String()
	opts.IPAddresses = []string{"127.0.0.1"}
	opts.Admission.Mode = admission.ModeDRA
	server, err := app.NewServer(opts, app.Dependencies{Kube: c.cp.Kube, Tessera: c.cp.Tessera, Listener: ln})
	if err != nil {
		c.t.Fatal(err)
	}
	logger := ktesting.NewLogger(c.t, ktesting.NewConfig(ktesting.Verbosity(2)))
	ctx, cancel := context.WithCancel(klog.NewContext(c.ctx, logger))
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx) }()
	c.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			c.t.Errorf("webhook: %v", err)
		}
	})
	if err := framework.WaitWebhookTrusted(c.ctx, c.cp.Kube, mutating, validating); err != nil {
		c.t.Fatal(err)
	}
	// Ready, as its probe gates its Service: its caches hold the GPUNodes
	// as they were when it started, whose GPU kinds a percentage needs.
	probe := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	framework.WaitFor(c.t, time.Minute, "the webhook to be ready", func() (bool, string) {
		resp, err := probe.Get("https://" + ln.Addr().String() + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK, string(body)
	})
	// The API server reads the caBundle through its own informer.
	framework.WaitFor(c.t, time.Minute, "the API server to call the webhook", func() (bool, string) {
		_, err := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Create(c.ctx, hamiPod("probe", nil, "nvidia.com/gpu", "40"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "DRA mode"), fmt.Sprint(err)
	})
}

// visibleDevices is the value of NVIDIA_VISIBLE_DEVICES in env.
func visibleDevices(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "NVIDIA_VISIBLE_DEVICES="); ok {
			return v
		}
	}
	return ""
}
