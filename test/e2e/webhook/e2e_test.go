package webhook

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/webhook/admission"
	"github.com/tessera-gpu/tessera/webhook/app"
	"github.com/tessera-gpu/tessera/webhook/certs"
)

const (
	webhookNamespace = "tessera-system"
	workNamespace    = "team-a"
	optedOutNS       = "opted-out"
)

func gpuPod(name string, limits ...string) *corev1.Pod {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(limits); i += 2 {
		l[corev1.ResourceName(limits[i])] = resource.MustParse(limits[i+1])
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: "registry.example/cuda:12", Resources: corev1.ResourceRequirements{Limits: l},
		}}},
	}
}

// TestSelfManagedWebhook installs the shipped configurations without a
// caBundle and runs the webhook in self-managed mode: the API server must
// come to trust it with no step in between, and then every GPU pod goes
// through it.
func TestSelfManagedWebhook(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp := framework.Start(t, framework.Options{})
	// The framework makes webhookNamespace, where the nodes' Leases live.
	createNamespace(ctx, t, cp.Kube, workNamespace, nil)
	createNamespace(ctx, t, cp.Kube, optedOutNS, map[string]string{admission.DefaultOptOutLabel: admission.DefaultOptOutValue})
	createGPUNode(ctx, t, cp, "node-1", 24576)

	// As with a Helm install, the webhook may start before its
	// configurations exist; it retries until it can write their caBundle.
	opts := app.NewOptions()
	opts.TLSMode = app.TLSModeSelfManaged
	opts.Namespace = webhookNamespace
	opts.IPAddresses = []string{"127.0.0.1"}
	w := startWebhook(t, cp, opts)
	// Not ready while the API server cannot trust it: a Service would not
	// route to it yet.
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		code, _ := w.get(t, "/readyz")
		return code != 0, nil
	})
	if err != nil {
		t.Fatal("the webhook never answered /readyz")
	}
	if code, body := w.get(t, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "self-managed serving certificate is not set up yet") {
		t.Errorf("/readyz before the configurations exist = %d %q, want 503 naming the certificate", code, body)
	}
	installShipped(ctx, t, cp.Kube, w.base, nil)
	w.waitReady(ctx, t)
	kube, warnings := cp.ClientWithWarnings(t)

	ok := t.Run("the API server trusts the self-managed certificate with no manual step", func(t *testing.T) {
		secret, err := cp.Kube.CoreV1().Secrets(webhookNamespace).Get(ctx, opts.SecretName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the webhook made no Secret: %v", err)
		}
		ca := secret.Data[certs.KeyCACert]
		m, err := cp.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, opts.MutatingWebhookConfiguration, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, err := cp.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, opts.ValidatingWebhookConfiguration, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(m.Webhooks[0].ClientConfig.CABundle, ca) || !bytes.Equal(v.Webhooks[0].ClientConfig.CABundle, ca) {
			t.Fatal("the configurations' caBundle is not the Secret's authority")
		}
		// The API server picks up the new caBundle within moments; until
		// then the call fails on the unknown authority.
		var last error
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			var p *corev1.Pod
			p, last = kube.CoreV1().Pods(workNamespace).Create(ctx, gpuPod("probe", "nvidia.com/gpumem", "1000"),
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return last == nil && p.Spec.SchedulerName == admission.DefaultSchedulerName, nil
		})
		if err != nil {
			t.Fatalf("the API server never got a mutated pod through the webhook: %v", last)
		}
		warnings.Take()
	})
	if !ok {
		t.FailNow()
	}

	t.Run("a pod with only gpumem gets a GPU count and Tessera's scheduler", func(t *testing.T) {
		p, err := kube.CoreV1().Pods(workNamespace).Create(ctx, gpuPod("gpumem-only", "nvidia.com/gpumem", "4000"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := p.Spec.Containers[0]
		want := resource.MustParse("1")
		if got := c.Resources.Limits["nvidia.com/gpu"]; got.Cmp(want) != 0 {
			t.Errorf("limits[nvidia.com/gpu] = %s, want 1", got.String())
		}
		if got := c.Resources.Requests["nvidia.com/gpu"]; got.Cmp(want) != 0 {
			t.Errorf("requests[nvidia.com/gpu] = %s, want 1", got.String())
		}
		if p.Spec.SchedulerName != admission.DefaultSchedulerName {
			t.Errorf("schedulerName = %q, want %q", p.Spec.SchedulerName, admission.DefaultSchedulerName)
		}
		if got := warnings.Take(); len(got) > 0 {
			t.Errorf("unexpected warnings: %q", got)
		}
	})

	t.Run("a GPU pod naming a PodGroup the cluster does not serve is warned about", func(t *testing.T) {
		pod := gpuPod("gang-member", "nvidia.com/gpumem", "4000")
		pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("trainer")}
		p, err := kube.CoreV1().Pods(workNamespace).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Without the Workload API the API server drops the field after
		// admission: the warning is all that tells the pod's owner.
		if p.Spec.SchedulingGroup != nil {
			t.Errorf("the API server kept spec.schedulingGroup without the Workload API")
		}
		got := warnings.Take()
		if len(got) != 1 || !strings.Contains(got[0], `PodGroup "trainer"`) || !strings.Contains(got[0], "GenericWorkload") {
			t.Errorf("warnings %q, want one naming the PodGroup and the feature gate", got)
		}
	})

	t.Run("an invalid pod is refused with the message kubectl shows", func(t *testing.T) {
		_, err := kube.CoreV1().Pods(workNamespace).Create(ctx, gpuPod("too-many-cores", "nvidia.com/gpucores", "150"), metav1.CreateOptions{})
		if err == nil {
			t.Fatal("the pod was created")
		}
		// kubectl prints: Error from server (Forbidden): error when creating "pod.yaml": <this>
		want := `admission webhook "validate.pods.gpu.tessera.dev" denied the request: ` +
			`container "main": spec.containers[0].resources.limits[nvidia.com/gpucores]: Invalid value: "150": must be at most 100`
		if err.Error() != want {
			t.Errorf("error:\n got: %s\nwant: %s", err.Error(), want)
		}
		if !apierrors.IsForbidden(err) {
			t.Errorf("error reason = %v, want Forbidden", apierrors.ReasonForError(err))
		}
	})

	t.Run("a request larger than any GPU is admitted with a warning", func(t *testing.T) {
		if _, err := kube.CoreV1().Pods(workNamespace).Create(ctx, gpuPod("too-large", "nvidia.com/gpumem", "90000"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		want := []string{`container "main" asks for 90000 MiB of GPU memory, more than any GPU in the cluster has (largest: 24576 MiB)`}
		if diff := cmp.Diff(want, warnings.Take()); diff != "" {
			t.Errorf("warnings (-want +got):\n%s", diff)
		}
	})

	untouched := []struct {
		name      string
		namespace string
		pod       *corev1.Pod
	}{
		{"a GPU pod in an opted-out namespace", optedOutNS, gpuPod("gpu", "nvidia.com/gpumem", "4000")},
		{"an invalid GPU pod in an opted-out namespace", optedOutNS, gpuPod("invalid", "nvidia.com/gpucores", "150")},
		{"a GPU pod labelled to opt out", workNamespace, func() *corev1.Pod {
			p := gpuPod("labelled", "nvidia.com/gpumem", "4000")
			p.Labels = map[string]string{admission.DefaultOptOutLabel: admission.DefaultOptOutValue}
			return p
		}()},
		{"a pod that asks for no GPU", workNamespace, gpuPod("cpu-only", "cpu", "1")},
		{"a GPU pod in the webhook's own namespace", webhookNamespace, gpuPod("own", "nvidia.com/gpumem", "4000")},
	}
	for _, tc := range untouched {
		t.Run(tc.name+" passes untouched and is never sent", func(t *testing.T) {
			before := w.sentToWebhook(t)
			p, err := kube.CoreV1().Pods(tc.namespace).Create(ctx, tc.pod, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := p.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]; ok {
				t.Error("a GPU count was added")
			}
			if p.Spec.SchedulerName != corev1.DefaultSchedulerName {
				t.Errorf("schedulerName = %q, want the default", p.Spec.SchedulerName)
			}
			if after := w.sentToWebhook(t); after != before {
				t.Errorf("the API server sent %d reviews to the webhook, want none", after-before)
			}
		})
	}

	t.Run("GPU pods were reviewed by both webhooks", func(t *testing.T) {
		if n := w.requests(t, admission.WebhookMutate, admission.ResultPatched); n < 3 {
			t.Errorf("mutate/patched = %d, want at least 3", n)
		}
		if n := w.requests(t, admission.WebhookValidate, admission.ResultDenied); n != 1 {
			t.Errorf("validate/denied = %d, want 1", n)
		}
	})

	// Kueue writes the annotation through a Job's pod template, or by an
	// update when it admits a plain pod; a pod created with it by hand
	// would take the GPU room held for the Workload's pods.
	t.Run("a GPU pod created with the gang-hold annotation and no controller is refused", func(t *testing.T) {
		held := func(name string) *corev1.Pod {
			p := gpuPod(name, "nvidia.com/gpumem", "4000")
			p.Annotations = map[string]string{gpuv1alpha1.GangHoldAnnotation: "0b7c6a2e-uid/main"}
			return p
		}
		_, err := kube.CoreV1().Pods(workNamespace).Create(ctx, held("by-hand"), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "metadata.annotations[gpu.tessera.dev/gang-hold]: Forbidden") {
			t.Errorf("creating a pod with the annotation by hand: %v, want Forbidden naming the annotation", err)
		}

		jobs := held("of-a-job")
		jobs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "0b7c6a2e-job", Controller: ptr.To(true)}}
		if _, err := kube.CoreV1().Pods(workNamespace).Create(ctx, jobs, metav1.CreateOptions{}); err != nil {
			t.Errorf("creating a Job's pod with the annotation from its template: %v", err)
		}

		plain, err := kube.CoreV1().Pods(workNamespace).Create(ctx, gpuPod("plain", "nvidia.com/gpumem", "4000"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		plain.Annotations = map[string]string{gpuv1alpha1.GangHoldAnnotation: "0b7c6a2e-uid/main"}
		if _, err := kube.CoreV1().Pods(workNamespace).Update(ctx, plain, metav1.UpdateOptions{}); err != nil {
			t.Errorf("adding the annotation to a plain pod, as Kueue does when it admits it: %v", err)
		}
	})
}
