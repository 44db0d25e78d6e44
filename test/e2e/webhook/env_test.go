package webhook

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/webhook/app"
)

// runningWebhook is the webhook daemon running in process for one test.
type runningWebhook struct {
	base string // https://127.0.0.1:port
}

// startWebhook runs the daemon with opts on a fresh loopback port and waits
// until it reports ready. It is stopped when the test ends.
func startWebhook(t *testing.T, cp *framework.ControlPlane, opts *app.Options) *runningWebhook {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startWebhookOn(t, cp, opts, ln)
}

// startWebhookOn runs the daemon on ln, with its clients built as the
// daemon builds them (its rate limits, not the test's).
func startWebhookOn(t *testing.T, cp *framework.ControlPlane, opts *app.Options, ln net.Listener) *runningWebhook {
	t.Helper()
	opts.ListenAddress = ln.Addr().String()
	stop := cp.RunWebhook(t, opts, ln)
	t.Cleanup(func() { _ = stop() })
	return &runningWebhook{base: "https://" + ln.Addr().String()}
}

// insecure is how the kubelet probes an HTTPS endpoint: without verifying.
var insecure = &http.Client{
	Timeout:   5 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // a probe, as the kubelet's
}

func (w *runningWebhook) get(t testing.TB, path string) (int, string) {
	t.Helper()
	resp, err := insecure.Get(w.base + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (w *runningWebhook) waitReady(ctx context.Context, t testing.TB) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		var code int
		code, last = w.get(t, "/readyz")
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("the webhook did not become ready: %s", last)
	}
}

// requests returns tessera_webhook_requests_total for webhook and result.
func (w *runningWebhook) requests(t testing.TB, webhook, result string) int {
	t.Helper()
	code, body := w.get(t, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	re := regexp.MustCompile(`(?m)^tessera_webhook_requests_total\{result="` + result + `",webhook="` + webhook + `"\} (\d+)$`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no tessera_webhook_requests_total for %s/%s in /metrics", webhook, result)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// sentToWebhook counts every review either webhook has answered.
func (w *runningWebhook) sentToWebhook(t testing.TB) int {
	n := 0
	for _, webhook := range []string{"mutate", "validate"} {
		for _, result := range []string{"allowed", "patched", "denied", "bad_request", "error"} {
			n += w.requests(t, webhook, result)
		}
	}
	return n
}

// installShipped creates the shipped webhook configurations with their
// clientConfig pointed at base, trusting caBundle (nil: none yet).
func installShipped(ctx context.Context, t testing.TB, kube kubernetes.Interface, base string, caBundle []byte) {
	t.Helper()
	m, v := loadShipped(t)
	point := func(c *admissionregistrationv1.WebhookClientConfig) {
		url := base + *c.Service.Path
		*c = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle}
	}
	for i := range m.Webhooks {
		point(&m.Webhooks[i].ClientConfig)
	}
	for i := range v.Webhooks {
		point(&v.Webhooks[i].ClientConfig)
	}
	if _, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatalf("installing the shipped MutatingWebhookConfiguration: %v", err)
	}
	if _, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, v, metav1.CreateOptions{}); err != nil {
		t.Fatalf("installing the shipped ValidatingWebhookConfiguration: %v", err)
	}
}

// setCABundle replaces the caBundle of the installed configurations.
func setCABundle(ctx context.Context, t testing.TB, kube kubernetes.Interface, caBundle []byte) {
	t.Helper()
	m, v := loadShipped(t)
	mc := kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	mutating, err := mc.Get(ctx, m.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range mutating.Webhooks {
		mutating.Webhooks[i].ClientConfig.CABundle = caBundle
	}
	if _, err := mc.Update(ctx, mutating, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	vc := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	validating, err := vc.Get(ctx, v.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range validating.Webhooks {
		validating.Webhooks[i].ClientConfig.CABundle = caBundle
	}
	if _, err := vc.Update(ctx, validating, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createNamespace(ctx context.Context, t testing.TB, kube kubernetes.Interface, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// createGPUNode publishes one node's GPUs, as its device plugin would.
func createGPUNode(ctx context.Context, t testing.TB, cp *framework.ControlPlane, name string, memoryMiB int64) {
	t.Helper()
	framework.CreateGPUNode(ctx, t, cp.Tessera, name, &gpuv1alpha1.GPUNodeStatus{GPUCount: 1, Devices: []gpuv1alpha1.GPUDevice{{
		UUID: "GPU-" + name + "-0", Model: "NVIDIA L4", MemoryMiB: memoryMiB, Cores: 100, ShareLimit: 10, Health: gpuv1alpha1.GPUHealthy,
	}}})
}
