package fault

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tessera-gpu/tessera/gpurequest"
)

const (
	// gangNamespace is the gang-fit example's (deploy/examples/kueue/
	// gang-fit.yaml): its ClusterQueue lists the check.
	gangNamespace = "gang"
	// fragmentMiB is more than half an L4, so the fragments lie one per
	// GPU and leave 11,034 MiB free on each.
	fragmentMiB = 12000
	// jobsAlive Jobs at most at a time, of 2 pods of one GPU each: 8
	// GPUs, never more than the ClusterQueue's quota, so that Jobs wait
	// only for room on the GPUs.
	jobsAlive = 4
	// jobDeleteEvery and fragmentDeleteEvery: how often the oldest Job
	// whose pods all run, and the oldest fragment, end.
	jobDeleteEvery      = 3 * time.Second
	fragmentDeleteEvery = 4 * time.Second
)

// gangJobKind is one kind of the stream's Jobs.
type gangJobKind struct {
	name      string
	pods      int32
	memoryMiB int64
	// node, if set, is the only node the Job's pods may run on.
	node string
}

var (
	// smallJob fits beside a fragment; bigJob only on GPUs the fragments
	// have left.
	smallJob = gangJobKind{name: "small", pods: 2, memoryMiB: 8000}
	bigJob   = gangJobKind{name: "big", pods: 2, memoryMiB: 15000}
)

// gangLoad keeps jobsAlive Kueue Jobs, alternately small and big, in the
// gang-fit example's queue and ends the oldest whose pods all run every
// jobDeleteEvery, while the fragments end one by one. API errors (while
// kube-apiserver restarts) are ignored: the load goes on when it answers.
type gangLoad struct {
	c      *cluster
	prefix string
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex
	// next, if set, is the kind of the next Job, once.
	next    *gangJobKind
	created int
}

// fragmentGPUs places one fragment on each GPU of the cluster and waits
// until they all run.
func (c *cluster) fragmentGPUs(ctx context.Context, t *testing.T, prefix string) {
	t.Helper()
	names := gpurequest.DefaultResourceNames()
	for i := range nodes * gpusPerNode {
		p := gpuPod(fmt.Sprintf("%s-frag-%02d", prefix, i), schedulerName)
		p.Spec.Containers[0].Resources.Limits[names.Memory] = *resource.NewQuantity(fragmentMiB, resource.DecimalSI)
		if _, err := c.cp.Kube.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.waitRunning(t, namespace, nodes*gpusPerNode)
}

// startGangLoad runs the stream until stop; prefix names its Jobs.
func startGangLoad(ctx context.Context, c *cluster, prefix string) *gangLoad {
	ctx, cancel := context.WithCancel(ctx)
	l := &gangLoad{c: c, prefix: prefix, cancel: cancel}
	l.wg.Add(3)
	go func() {
		defer l.wg.Done()
		for sleep(ctx, 500*time.Millisecond) {
			l.fill(ctx)
		}
	}()
	go func() {
		defer l.wg.Done()
		for sleep(ctx, jobDeleteEvery) {
			l.deleteOldestRunningJob(ctx)
		}
	}()
	go func() {
		defer l.wg.Done()
		for sleep(ctx, fragmentDeleteEvery) {
			deleteOldestRunning(ctx, c.cp)
		}
	}()
	return l
}

// stop ends the stream and waits for it.
func (l *gangLoad) stop() {
	l.cancel()
	l.wg.Wait()
}

// submitNext makes the next Job of the stream one of kind.
func (l *gangLoad) submitNext(kind gangJobKind) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next = &kind
}

// fill creates Jobs until jobsAlive are.
func (l *gangLoad) fill(ctx context.Context) {
	jobs, err := l.c.cp.Kube.BatchV1().Jobs(gangNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	alive := slices.DeleteFunc(jobs.Items, func(j batchv1.Job) bool { return j.DeletionTimestamp != nil })
	for range jobsAlive - len(alive) {
		l.mu.Lock()
		kind := []gangJobKind{smallJob, bigJob}[l.created%2]
		next := l.next
		if next != nil {
			kind = *next
		}
		name := fmt.Sprintf("%s-%03d-%s", l.prefix, l.created, kind.name)
		l.mu.Unlock()
		if _, err := l.c.cp.Kube.BatchV1().Jobs(gangNamespace).Create(ctx, gangJob(name, kind), metav1.CreateOptions{}); err != nil {
			return
		}
		l.mu.Lock()
		l.created++
		if next != nil {
			l.next = nil
		}
		l.mu.Unlock()
	}
}

// deleteOldestRunningJob deletes the oldest Job whose pods all run, as a
// Job that finishes frees its GPUs.
func (l *gangLoad) deleteOldestRunningJob(ctx context.Context) {
	cp := l.c.cp
	jobs, err := cp.Kube.BatchV1().Jobs(gangNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	pods, err := cp.Kube.CoreV1().Pods(gangNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	running := map[string]int32{}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running[p.Labels[batchv1.JobNameLabel]]++
		}
	}
	done := slices.DeleteFunc(jobs.Items, func(j batchv1.Job) bool {
		return j.DeletionTimestamp != nil || running[j.Name] < ptr.Deref(j.Spec.Parallelism, 1)
	})
	if len(done) == 0 {
		return
	}
	oldest := slices.MinFunc(done, func(a, b batchv1.Job) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	_ = cp.Kube.BatchV1().Jobs(gangNamespace).Delete(ctx, oldest.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
}

// gangJob is a Job of kind.pods pods of one GPU slice each, of
// kind.memoryMiB and 30% of the GPU's compute, in the gang-fit example's
// LocalQueue. Tessera's webhook writes the totals Kueue counts.
func gangJob(name string, kind gangJobKind) *batchv1.Job {
	names := gpurequest.DefaultResourceNames()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: gangNamespace, Labels: map[string]string{"kueue.x-k8s.io/queue-name": "default"}},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To(kind.pods),
			Completions: ptr.To(kind.pods),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy:                 corev1.RestartPolicyNever,
				TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers: []corev1.Container{{
					Name: "train", Image: "registry.invalid/train",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
						names.Count:  resource.MustParse("1"),
						names.Memory: *resource.NewQuantity(kind.memoryMiB, resource.DecimalSI),
						names.Cores:  resource.MustParse("30"),
					}},
				}},
			}},
		},
	}
	if kind.node != "" {
		job.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: kind.node}
	}
	return job
}
