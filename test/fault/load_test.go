package fault

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/test/framework"
)

const (
	namespace     = "default"
	schedulerName = "tessera-scheduler"
	// Every pod of the suite asks for the same slice: two fit on an L4.
	podMemoryMiB int64 = 10000
	podCores     int32 = 40
)

// load keeps a number of the suite's pods alive, more than fit, and
// deletes the oldest running one at a fixed period, so that pods are always
// waiting for GPUs that are freed one by one. API errors (while
// kube-apiserver restarts) are ignored: the load goes on when it answers.
type load struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startLoad runs the load on the cluster until stop; prefix names its pods.
func startLoad(ctx context.Context, c *cluster, prefix string, alive int, deleteEvery time.Duration) *load {
	cp := c.cp
	ctx, cancel := context.WithCancel(ctx)
	l := &load{cancel: cancel}
	l.wg.Add(2)
	go func() {
		defer l.wg.Done()
		created := 0
		for ctx.Err() == nil {
			if s, err := readState(ctx, cp, c.mode == draMode); err == nil {
				for range alive - len(s.live()) {
					name := fmt.Sprintf("%s-%03d", prefix, created)
					if _, err := cp.Kube.CoreV1().Pods(namespace).Create(ctx, gpuPod(name, c.schedulerName()), metav1.CreateOptions{}); err == nil {
						created++
					}
				}
			}
			sleep(ctx, 200*time.Millisecond)
		}
	}()
	go func() {
		defer l.wg.Done()
		for sleep(ctx, deleteEvery) {
			deleteOldestRunning(ctx, cp)
		}
	}()
	return l
}

// stop ends the load and waits for it.
func (l *load) stop() {
	l.cancel()
	l.wg.Wait()
}

func deleteOldestRunning(ctx context.Context, cp *framework.ControlPlane) {
	pods, err := cp.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	running := slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool {
		return p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil
	})
	if len(running) == 0 {
		return
	}
	oldest := slices.MinFunc(running, func(a, b corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	_ = cp.Kube.CoreV1().Pods(namespace).Delete(ctx, oldest.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
}

// sleep waits d, and reports false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// gpuPod is one of the suite's pods: one GPU with podMemoryMiB and
// podCores, for the scheduler named.
func gpuPod(name, scheduler string) *corev1.Pod {
	names := gpurequest.DefaultResourceNames()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{
			SchedulerName:                 scheduler,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{
				Name: "cuda", Image: "registry.invalid/cuda",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					names.Count:  resource.MustParse("1"),
					names.Memory: *resource.NewQuantity(podMemoryMiB, resource.DecimalSI),
					names.Cores:  *resource.NewQuantity(int64(podCores), resource.DecimalSI),
				}},
			}},
		},
	}
}
