package admission

import (
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// deployment is a Deployment whose pod template has the containers.
func deployment(labels map[string]string, containers ...corev1.Container) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "serve", Namespace: testNamespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "serve"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "serve"}},
				Spec:       corev1.PodSpec{Containers: containers},
			},
		},
	}
}

func deploymentRequest(t testing.TB, d *appsv1.Deployment) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return &admissionv1.AdmissionRequest{
		UID: types.UID("uid-1"), Kind: deploymentKind, Resource: deploymentResource, Name: d.Name, Namespace: d.Namespace,
		Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw},
	}
}

// mutatedJob is the Job as the validating webhook receives it.
func mutatedJob(t testing.TB, a *Admitter, j *batchv1.Job) *batchv1.Job {
	t.Helper()
	req := jobRequest(t, j, nil)
	resp := a.Mutate(testContext(t), req)
	if !resp.Allowed {
		t.Fatalf("Mutate refused the Job: %s", resp.Result.Message)
	}
	out := &batchv1.Job{}
	decodePatched(t, req, resp, out)
	return out
}

func TestUnmanagedQueueWarning(t *testing.T) {
	queued := map[string]string{KueueQueueLabel: "user-queue"}
	gpu := limited("main", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "1024", "nvidia.com/gpucores", "30")
	cpu := limited("main", "cpu", "1")
	managed := namespace(testNamespace, map[string]string{"kueue-managed": "true"})
	unmanaged := namespace(testNamespace, nil)
	shipped := []string{"batch/job", "pod", "deployment"}
	podWith := func(labels map[string]string, c corev1.Container) *corev1.Pod {
		p := pod(c)
		p.Labels = labels
		return p
	}
	owned := podWith(queued, gpu)
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "serve-1", UID: "rs", Controller: ptr.To(true)}}
	jobWith := func(labels map[string]string) *batchv1.Job {
		j := job(gpu)
		j.Labels = labels
		return j
	}

	tests := []struct {
		name         string
		integrations []string
		ns           *corev1.Namespace
		// review returns the warnings of the object's admission.
		review func(t *testing.T, a *Admitter) []string
		// want is a part of the one Kueue warning expected, or "" for none.
		want string
	}{
		{
			name: "a Deployment whose integration is off runs past the queue", integrations: []string{"batch/job", "pod"}, ns: managed,
			review: reviewDeployment(deployment(queued, gpu)),
			want:   `Deployment "serve" labelled kueue.x-k8s.io/queue-name=user-queue, names a Kueue queue, but Kueue will not manage it: Kueue's integrations (batch/job, pod) do not include "deployment"`,
		},
		{
			name: "a Deployment in a namespace Kueue does not select is never admitted", integrations: shipped, ns: unmanaged,
			review: reviewDeployment(deployment(queued, gpu)),
			want:   `namespace "team-a" does not match Kueue's managedJobsNamespaceSelector (kueue-managed=true)`,
		},
		{
			name: "a Deployment Kueue manages", integrations: shipped, ns: managed,
			review: reviewDeployment(deployment(queued, gpu)),
		},
		{
			name: "a Deployment that asks for no GPU", integrations: shipped, ns: unmanaged,
			review: reviewDeployment(deployment(queued, cpu)),
		},
		{
			name: "a Deployment that names no queue", integrations: shipped, ns: unmanaged,
			review: reviewDeployment(deployment(nil, gpu)),
		},
		{
			name: "no warning when Kueue is not run", ns: unmanaged,
			review: reviewDeployment(deployment(queued, gpu)),
		},
		{
			name: "a pod whose integration is off", integrations: []string{"batch/job", "deployment"}, ns: managed,
			review: reviewPod(podWith(queued, gpu)),
			want:   `pod "train" labelled kueue.x-k8s.io/queue-name=user-queue, names a Kueue queue, but Kueue will not manage it: Kueue's integrations (batch/job, deployment) do not include "pod"`,
		},
		{
			name: "a pod in a namespace Kueue does not select", integrations: shipped, ns: unmanaged,
			review: reviewPod(podWith(queued, gpu)),
			want:   `pod "train" labelled kueue.x-k8s.io/queue-name=user-queue, names a Kueue queue, but Kueue will not manage it: namespace "team-a"`,
		},
		{
			name: "a pod a controller created is left to its owner's review", integrations: shipped, ns: unmanaged,
			review: reviewPod(owned),
		},
		{
			name: "a Job whose integration is off", integrations: []string{"pod"}, ns: managed,
			review: reviewJob(jobWith(queued)),
			want:   `Job "train" labelled kueue.x-k8s.io/queue-name=user-queue, names a Kueue queue, but Kueue will not manage it: Kueue's integrations (pod) do not include "batch/job"`,
		},
		{
			name: "a Job in a DRA namespace Kueue does not select", integrations: shipped, ns: namespace(testNamespace, map[string]string{DefaultModeLabel: ModeDRA}),
			review: reviewJob(jobWith(queued)),
			want:   `Job "train" labelled kueue.x-k8s.io/queue-name=user-queue, names a Kueue queue, but Kueue will not manage it: namespace "team-a"`,
		},
		{
			name: "a Job Kueue manages", integrations: shipped, ns: managed,
			review: reviewJob(jobWith(queued)),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.KueueIntegrations = tt.integrations
			cfg.KueueManagedNamespaces = "kueue-managed=true"
			a := newAdmitter(t, cfg, tt.ns, gpuNode("node-1", 100, 81920, 81920))
			var got []string
			for _, w := range tt.review(t, a) {
				if strings.Contains(w, KueueQueueLabel) {
					got = append(got, w)
				}
			}
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("warnings %q, want none about Kueue's queue", got)
			case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0], tt.want)):
				t.Errorf("warnings %q, want one saying %q", got, tt.want)
			}
		})
	}
}

func reviewDeployment(d *appsv1.Deployment) func(*testing.T, *Admitter) []string {
	return func(t *testing.T, a *Admitter) []string {
		resp := a.Validate(testContext(t), deploymentRequest(t, d))
		if !resp.Allowed {
			t.Fatalf("Validate refused the Deployment: %s", resp.Result.Message)
		}
		return resp.Warnings
	}
}

func reviewPod(p *corev1.Pod) func(*testing.T, *Admitter) []string {
	return func(t *testing.T, a *Admitter) []string {
		resp := a.Validate(testContext(t), createRequest(t, mutated(t, a, p)))
		if !resp.Allowed {
			t.Fatalf("Validate refused the pod: %s", resp.Result.Message)
		}
		return resp.Warnings
	}
}

func reviewJob(j *batchv1.Job) func(*testing.T, *Admitter) []string {
	return func(t *testing.T, a *Admitter) []string {
		resp := a.Validate(testContext(t), jobRequest(t, mutatedJob(t, a, j), nil))
		if !resp.Allowed {
			t.Fatalf("Validate refused the Job: %s", resp.Result.Message)
		}
		return resp.Warnings
	}
}
