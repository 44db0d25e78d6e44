package admission

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// job is a Job in Kueue's queue whose pod template has the containers.
func job(containers ...corev1.Container) *batchv1.Job {
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: testNamespace, Labels: map[string]string{"kueue.x-k8s.io/queue-name": "gpu"}},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](2),
			Suspend:     ptr.To(true),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: containers,
			}},
		},
	}
}

// jobRequest is the request the API server sends for creating j, or, with
// old, for updating old to j.
func jobRequest(t testing.TB, j, old *batchv1.Job) *admissionv1.AdmissionRequest {
	t.Helper()
	raw := func(j *batchv1.Job) runtime.RawExtension {
		if j == nil {
			return runtime.RawExtension{}
		}
		data, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: data}
	}
	req := &admissionv1.AdmissionRequest{
		UID: types.UID("uid-1"), Kind: jobKind, Resource: jobResource, Name: j.Name, Namespace: j.Namespace,
		Operation: admissionv1.Create, Object: raw(j), OldObject: raw(old),
	}
	if old != nil {
		req.Operation = admissionv1.Update
	}
	return req
}

// jobMutation is a case of TestMutateJob.
type jobMutation struct {
	name string
	job  *batchv1.Job
	// old, when set, makes the request an update of old to job.
	old     *batchv1.Job
	objects []runtime.Object
	// want edits a copy of job's template into the expected result; nil
	// means unchanged.
	want func(j *batchv1.Job)
}

func jobMutations() []jobMutation {
	optedOut := map[string]string{DefaultOptOutLabel: DefaultOptOutValue}
	withLabels := func(j *batchv1.Job, job, template map[string]string) *batchv1.Job {
		for k, v := range job {
			j.Labels[k] = v
		}
		j.Spec.Template.Labels = template
		return j
	}
	twoGPUs := func() *batchv1.Job { return job(limited("train", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "20000")) }
	return []jobMutation{
		{
			name: "the template gets the totals, 2 GPUs x 20000 MiB as 40000",
			job:  twoGPUs(),
			want: func(j *batchv1.Job) {
				j.Spec.Template.Spec.Containers[0] = limited("train", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "20000", quotaGPUs, "2", quotaMemory, "40000")
			},
		},
		{
			name: "NVIDIA's MIG resource in the template becomes a count of 1 and the template's profile annotation",
			job:  job(limited("train", "nvidia.com/mig-3g.20gb", "1")),
			want: func(j *batchv1.Job) {
				j.Spec.Template.Spec.Containers[0] = limited("train", "nvidia.com/gpu", "1", quotaGPUs, "1", quotaCores, "100")
				j.Spec.Template.Annotations = map[string]string{"tessera.dev/mig-profile": "3g.20gb"}
			},
		},
		{
			name: "a slice without a count is one GPU, in init containers too",
			job: func() *batchv1.Job {
				j := job(limited("train", "nvidia.com/gpumem", "20000", "nvidia.com/gpucores", "30"))
				j.Spec.Template.Spec.InitContainers = []corev1.Container{limited("warmup", "nvidia.com/gpu", "2", "nvidia.com/gpucores", "100")}
				return j
			}(),
			want: func(j *batchv1.Job) {
				j.Spec.Template.Spec.InitContainers[0] = limited("warmup", "nvidia.com/gpu", "2", "nvidia.com/gpucores", "100", quotaGPUs, "2", quotaCores, "200")
				j.Spec.Template.Spec.Containers[0] = limited("train", "nvidia.com/gpumem", "20000", "nvidia.com/gpucores", "30", quotaGPUs, "1", quotaCores, "30", quotaMemory, "20000")
				j.Spec.Template.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"] = resources("n", "1")["n"]
				j.Spec.Template.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resources("n", "1")["n"]
			},
		},
		{
			name: "totals written by hand are overwritten",
			job:  job(limited("train", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "20000", quotaGPUs, "2", quotaMemory, "20000")),
			want: func(j *batchv1.Job) {
				j.Spec.Template.Spec.Containers[0] = limited("train", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "20000", quotaGPUs, "2", quotaMemory, "40000")
			},
		},
		{name: "a Job that asks for no GPU is left alone", job: job(limited("train", "cpu", "1"))},
		{name: "a Job labelled to opt out is left alone", job: withLabels(twoGPUs(), optedOut, nil)},
		{name: "a Job whose pods are labelled to opt out is left alone", job: withLabels(twoGPUs(), nil, optedOut)},
		{name: "a Job in an opted-out namespace is left alone", job: twoGPUs(), objects: []runtime.Object{namespace(testNamespace, optedOut)}},
		{name: "in DRA mode the Job is left alone: its pods get claims", job: twoGPUs(), objects: []runtime.Object{namespace(testNamespace, map[string]string{DefaultModeLabel: ModeDRA})}},
		{
			name: "an update that leaves the resources, as Kueue resuming a Job, is let through unchanged",
			job:  func() *batchv1.Job { j := twoGPUs(); j.Spec.Suspend = ptr.To(false); return j }(),
			old:  twoGPUs(),
		},
		{
			name: "an update of a suspended Job's resources gets the new totals",
			job:  job(limited("train", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "30000", quotaGPUs, "2", quotaMemory, "40000")),
			old:  job(limited("train", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "20000", quotaGPUs, "2", quotaMemory, "40000")),
			want: func(j *batchv1.Job) {
				j.Spec.Template.Spec.Containers[0] = limited("train", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "30000", quotaGPUs, "2", quotaMemory, "60000")
			},
		},
	}
}

// TestMutateJob checks that a Job's pod template gets the totals a pod
// would, through the pod's own rules: the mutated template's containers
// are those of a pod with the same containers, mutated.
func TestMutateJob(t *testing.T) {
	for _, tc := range jobMutations() {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdmitter(t, DefaultConfig(), tc.objects...)
			req := jobRequest(t, tc.job, tc.old)
			resp := a.Mutate(testContext(t), req)
			if !resp.Allowed {
				t.Fatalf("Mutate refused the Job: %s", resp.Result.Message)
			}
			got := &batchv1.Job{}
			decodePatched(t, req, resp, got)
			want := tc.job.DeepCopy()
			if tc.want != nil {
				tc.want(want)
				p := pod(tc.job.Spec.Template.Spec.Containers...)
				p.Spec.InitContainers = tc.job.Spec.Template.Spec.InitContainers
				asPod := mutated(t, a, p)
				wantSpec, podSpec := want.Spec.Template.Spec, asPod.Spec
				if diff := cmp.Diff(asJSON(t, [][]corev1.Container{wantSpec.InitContainers, wantSpec.Containers}),
					asJSON(t, [][]corev1.Container{podSpec.InitContainers, podSpec.Containers})); diff != "" {
					t.Errorf("the case's template differs from a pod's mutation (-case +pod):\n%s", diff)
				}
			}
			if diff := cmp.Diff(asJSON(t, want), asJSON(t, got)); diff != "" {
				t.Errorf("Job differs (-want +got):\n%s", diff)
			}
			if again := a.Mutate(testContext(t), jobRequest(t, got, nil)); len(again.Patch) > 0 && tc.want != nil {
				t.Errorf("second mutation patched again: %s", again.Patch)
			}
		})
	}
}

func TestValidateJob(t *testing.T) {
	twoGPUs := func(pairs ...string) *batchv1.Job {
		return job(limited("train", append([]string{"nvidia.com/gpu", "2", "nvidia.com/gpumem", "20000"}, pairs...)...))
	}
	tests := []struct {
		name    string
		job     *batchv1.Job
		old     *batchv1.Job
		objects []runtime.Object
		// want are parts of the message; none means admitted.
		want []string
	}{
		{name: "the totals the mutation writes are admitted", job: twoGPUs(quotaGPUs, "2", quotaMemory, "40000")},
		{
			name: "memory counted per GPU rather than summed is refused, naming the template's field",
			job:  twoGPUs(quotaGPUs, "2", quotaMemory, "20000"),
			want: []string{`container "train": spec.template.spec.containers[0].resources.limits[gpu.tessera.dev/memory]: Invalid value: "20000": must be 40000 in limits and requests`},
		},
		{
			name: "a Job that skipped the mutation is told the totals it must carry",
			job:  twoGPUs(),
			want: []string{`spec.template.spec.containers[0].resources.limits[gpu.tessera.dev/gpus]: Required value: must be 2`},
		},
		{
			name: "a template whose pods would be refused is refused",
			job:  job(limited("train", "nvidia.com/gpu", "1", "nvidia.com/gpucores", "150")),
			want: []string{`spec.template.spec.containers[0].resources.limits[nvidia.com/gpucores]: Invalid value: "150": must be at most 100`},
		},
		{
			name:    "a Job over its namespace's quota is admitted, to wait in its queue",
			job:     twoGPUs(quotaGPUs, "2", quotaMemory, "40000"),
			objects: []runtime.Object{gpuQuota("gpu", quotaMemory, "30000", "0")},
		},
		{
			name:    "a template whose slices state no compute under a quota on compute is refused",
			job:     twoGPUs(quotaGPUs, "2", quotaMemory, "40000"),
			objects: []runtime.Object{gpuQuota("gpu", quotaCores, "400", "0")},
			want:    []string{"spec.template.spec.containers[0].resources.limits[nvidia.com/gpucores]: Required value: namespace team-a limits GPU compute (ResourceQuota gpu on requests.gpu.tessera.dev/cores): must specify nvidia.com/gpucores for: train"},
		},
		{
			name: "an update that leaves the resources is admitted, as for a Job from before the webhook",
			job:  func() *batchv1.Job { j := twoGPUs(); j.Spec.Suspend = ptr.To(false); return j }(),
			old:  twoGPUs(),
		},
		{
			name: "an update of the resources is checked",
			job:  twoGPUs(quotaGPUs, "2", quotaMemory, "20000"),
			old:  job(limited("train", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "10000", quotaGPUs, "2", quotaMemory, "20000")),
			want: []string{`spec.template.spec.containers[0].resources.limits[gpu.tessera.dev/memory]: Invalid value: "20000": must be 40000`},
		},
		{
			name:    "in DRA mode a Job carries no totals",
			job:     twoGPUs(),
			objects: []runtime.Object{namespace(testNamespace, map[string]string{DefaultModeLabel: ModeDRA})},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdmitter(t, DefaultConfig(), tc.objects...)
			resp := a.Validate(testContext(t), jobRequest(t, tc.job, tc.old))
			checkRefusal(t, resp.Allowed, resp.Result, tc.want)
			if !resp.Allowed && resp.Result.Details.Kind != "jobs" {
				t.Errorf("the refusal's details name kind %q, want jobs", resp.Result.Details.Kind)
			}
		})
	}
}

func TestJobReviewLeavesOtherRequestsAlone(t *testing.T) {
	a := newAdmitter(t, DefaultConfig())
	for _, name := range []string{WebhookMutate, WebhookValidate} {
		review := map[string]ReviewFunc{WebhookMutate: a.Mutate, WebhookValidate: a.Validate}[name]
		status := jobRequest(t, job(limited("train", "nvidia.com/gpumem", "1000")), nil)
		status.Operation, status.SubResource = admissionv1.Update, "status"
		if resp := review(testContext(t), status); !resp.Allowed || len(resp.Patch) > 0 {
			t.Errorf("%s: a status update: allowed %v, patch %s; want admitted unchanged", name, resp.Allowed, resp.Patch)
		}
		wrongKind := jobRequest(t, job(), nil)
		wrongKind.Kind = metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: "CronJob"}
		if resp := review(testContext(t), wrongKind); resp.Allowed || resp.Result.Code != 400 {
			t.Errorf("%s: a CronJob sent as jobs: allowed %v (%v); want a bad request", name, resp.Allowed, resp.Result)
		}
	}
}
