package queue

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/test/framework"
)

// Kueue's names in queue mode.
const (
	// queueLabel names the LocalQueue a Job is submitted to.
	queueLabel = "kueue.x-k8s.io/queue-name"
	// localQueue is the bench namespace's LocalQueue, clusterQueue the
	// ClusterQueue it feeds.
	localQueue   = "gpu"
	clusterQueue = "bench"
	// gangFitCheck is the AdmissionCheck the "with" run's ClusterQueue
	// lists, served by Tessera's scheduler.
	gangFitCheck = "gang-fit"
	// kueueManaged is the namespace label the shipped Kueue configuration
	// selects the namespaces it manages by (managedJobsNamespaceSelector).
	kueueManaged = "kueue-managed"
)

// jobName is the name of the i-th Job.
func jobName(i int) string { return fmt.Sprintf("bench-job-%05d", i) }

// queueJob is a Job of pods pods of the shape in the bench's LocalQueue,
// its pod template as Tessera's webhook leaves it: the GPU request per
// GPU under nvidia.com/*, the totals Kueue counts under gpu.tessera.dev/*
// in requests and limits, and Tessera's scheduler name. It is created
// suspended, as Kueue's webhook would make it.
func queueJob(name, schedulerName string, pods int, s harness.Shape) (*batchv1.Job, error) {
	c := corev1.Container{Name: "train", Image: "registry.k8s.io/pause:3.10"}
	c.Resources.Limits = harness.GPULimits(s, harness.FormSlices)
	req, _, errs := gpurequest.ContainerRequestOf(&c, gpuv1alpha1.ContainerApp, gpurequest.DefaultResourceNames(), field.NewPath("spec"))
	if len(errs) > 0 {
		return nil, fmt.Errorf("shape %q: %v", s.Name, errs.ToAggregate())
	}
	totals := req.QuotaTotals().ResourceList()
	maps.Copy(c.Resources.Limits, totals)
	c.Resources.Requests = totals
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: harness.Namespace, Labels: map[string]string{queueLabel: localQueue}},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To(int32(pods)),
			Completions: ptr.To(int32(pods)),
			Suspend:     ptr.To(true),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				SchedulerName:                 schedulerName,
				RestartPolicy:                 corev1.RestartPolicyNever,
				TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers:                    []corev1.Container{c},
			}},
		},
	}, nil
}

// queueObjects are Kueue's objects of a run: one ResourceFlavor, the
// ClusterQueue with quota, and the bench namespace's LocalQueue; with
// gangFit also the AdmissionCheck served by Tessera's scheduler, which
// the ClusterQueue then lists.
func queueObjects(quota corev1.ResourceList, gangFit bool) []map[string]any {
	kind := func(kind string, meta map[string]any, spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": meta, "spec": spec}
	}
	var covered []any
	var resources []any
	for _, name := range gpurequest.QuotaResources {
		q := quota[name]
		covered = append(covered, string(name))
		resources = append(resources, map[string]any{"name": string(name), "nominalQuota": q.String()})
	}
	cq := map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{corev1.LabelMetadataName: harness.Namespace}},
		"resourceGroups": []any{map[string]any{
			"coveredResources": covered,
			"flavors":          []any{map[string]any{"name": "tessera-gpus", "resources": resources}},
		}},
	}
	var objects []map[string]any
	if gangFit {
		objects = append(objects, kind("AdmissionCheck", map[string]any{"name": gangFitCheck}, map[string]any{"controllerName": gpuv1alpha1.GangFitControllerName}))
		cq["admissionChecksStrategy"] = map[string]any{"admissionChecks": []any{map[string]any{"name": gangFitCheck}}}
	}
	return append(objects,
		kind("ResourceFlavor", map[string]any{"name": "tessera-gpus"}, map[string]any{}),
		kind("ClusterQueue", map[string]any{"name": clusterQueue}, cq),
		kind("LocalQueue", map[string]any{"name": localQueue, "namespace": harness.Namespace}, map[string]any{"clusterQueue": clusterQueue}),
	)
}

// createQueues hands the bench namespace to Kueue, writes Kueue's objects
// of the run into dir as queues.yaml, for a person to read, creates them
// from there, and waits until the ClusterQueue is active: with gangFit
// that needs the AdmissionCheck's controller, Tessera's scheduler, to
// have marked the check Active. The earlier pods, created before Kueue's
// webhooks, stay outside Kueue.
func createQueues(ctx context.Context, env *harness.ClusterEnv, quota corev1.ResourceList, gangFit bool) error {
	label := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"true"}}}`, kueueManaged)
	if _, err := env.ControlPlane.Kube.CoreV1().Namespaces().Patch(ctx, harness.Namespace, types.MergePatchType, label, metav1.PatchOptions{FieldManager: harness.FieldManager}); err != nil {
		return fmt.Errorf("labelling namespace %s for Kueue: %w", harness.Namespace, err)
	}
	var data []byte
	for _, obj := range queueObjects(quota, gangFit) {
		doc, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		data = append(append(data, "---\n"...), doc...)
	}
	path := filepath.Join(env.Dir, "queues.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	if err := framework.ApplyManifests(ctx, env.ControlPlane.Config, path); err != nil {
		return fmt.Errorf("creating Kueue's objects: %w", err)
	}
	return waitClusterQueueActive(ctx, env, gangFit)
}

// waitClusterQueueActive waits at most a minute for the ClusterQueue's
// Active condition.
func waitClusterQueueActive(ctx context.Context, env *harness.ClusterEnv, gangFit bool) error {
	client, err := dynamicClient(env)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	last := "not read yet"
	for {
		cq, err := client.Resource(framework.KueueResource("clusterqueues")).Get(ctx, clusterQueue, metav1.GetOptions{})
		if err == nil {
			c := condition(cq.Object, "Active")
			if c["status"] == "True" {
				klog.FromContext(ctx).Info("ClusterQueue active", "clusterQueue", clusterQueue, "gangFit", gangFit)
				return nil
			}
			last = fmt.Sprintf("Active %v: %v", c["status"], c["message"])
		}
		select {
		case <-ctx.Done():
			hint := ""
			if gangFit {
				hint = fmt.Sprintf("; the AdmissionCheck %s needs its controller %s, Tessera's scheduler with --gang-fit", gangFitCheck, gpuv1alpha1.GangFitControllerName)
			}
			return fmt.Errorf("ClusterQueue %s is not active (%s)%s", clusterQueue, last, hint)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
