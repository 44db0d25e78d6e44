package fault

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/test/framework"
)

const (
	// podGroupNamespace holds the stream's PodGroups and their pods, apart
	// from the fragments, which end one by one.
	podGroupNamespace = "podgroups"
	// memberPrefix and the member's index begin the name of every pod of
	// the stream: pg-m2-f1-005-big is the third member of gang f1-005-big.
	memberPrefix = "pg-m"
	// gangSize members in each PodGroup, all of them its minCount.
	gangSize = 3
	// gangsAlive PodGroups at most at a time.
	gangsAlive = 3
	// gangLabel names, on each pod, its PodGroup.
	gangLabel = "tessera.test/gang"
	// fillEvery is how often the stream fills up its gangs.
	fillEvery = 500 * time.Millisecond
)

// podGroupLoad keeps gangsAlive PodGroups of gangSize GPU slices each,
// alternately small (they fit beside a fragment) and big (only on GPUs the
// fragments have left), and ends the oldest whose pods all run every
// jobDeleteEvery, while the fragments end one by one. API errors (while
// kube-apiserver restarts) are ignored: the load goes on when it answers.
type podGroupLoad struct {
	c      *cluster
	prefix string
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// created counts the PodGroups created; only fill touches it.
	created int
}

// startPodGroupLoad runs the stream until stop; prefix names its gangs.
func startPodGroupLoad(ctx context.Context, c *cluster, prefix string) *podGroupLoad {
	ctx, cancel := context.WithCancel(ctx)
	l := &podGroupLoad{c: c, prefix: prefix, cancel: cancel}
	l.wg.Add(2)
	// One goroutine fills and deletes, so that fill never sees a gang
	// being deleted as missing members.
	go func() {
		defer l.wg.Done()
		for i := 1; sleep(ctx, fillEvery); i++ {
			if i%int(jobDeleteEvery/fillEvery) == 0 {
				l.deleteOldestWholeGang(ctx)
			}
			l.fill(ctx)
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

// stop ends the stream, waits for it, gives every gang left its members
// and returns how many gangs it made.
func (l *podGroupLoad) stop(t *testing.T) int {
	t.Helper()
	l.cancel()
	l.wg.Wait()
	framework.WaitFor(t, watchBackoff, "every gang to have its members", func() (bool, string) {
		err := completeGangs(l.c.ctx, l.c)
		return err == nil, fmt.Sprint(err)
	})
	return l.created
}

// fill creates PodGroups until gangsAlive are, and the members any lacks.
func (l *podGroupLoad) fill(ctx context.Context) {
	kube := l.c.cp.Kube
	groups, err := kube.SchedulingV1beta1().PodGroups(podGroupNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	alive := slices.DeleteFunc(groups.Items, func(g schedulingv1beta1.PodGroup) bool { return g.DeletionTimestamp != nil })
	for range gangsAlive - len(alive) {
		kind := []gangJobKind{smallJob, bigJob}[l.created%2]
		pg := &schedulingv1beta1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%03d-%s", l.prefix, l.created, kind.name), Namespace: podGroupNamespace},
			Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
				Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: gangSize},
			}},
		}
		if _, err := kube.SchedulingV1beta1().PodGroups(podGroupNamespace).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
			return
		}
		l.created++
	}
	_ = completeGangs(ctx, l.c)
}

// completeGangs creates the members each alive PodGroup lacks: one not
// created while kube-apiserver restarted.
func completeGangs(ctx context.Context, c *cluster) error {
	kube := c.cp.Kube
	groups, err := kube.SchedulingV1beta1().PodGroups(podGroupNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	pods, err := kube.CoreV1().Pods(podGroupNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	exists := map[string]bool{}
	for _, p := range pods.Items {
		exists[p.Name] = true
	}
	for _, g := range groups.Items {
		kind := smallJob
		if strings.HasSuffix(g.Name, bigJob.name) {
			kind = bigJob
		}
		for i := range gangSize {
			if name := memberName(g.Name, i); !exists[name] && g.DeletionTimestamp == nil {
				if _, err := kube.CoreV1().Pods(podGroupNamespace).Create(ctx, gangMember(name, g.Name, kind), metav1.CreateOptions{}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// deleteOldestWholeGang deletes the oldest PodGroup whose pods all run,
// and its pods, as a finished job frees its GPUs.
func (l *podGroupLoad) deleteOldestWholeGang(ctx context.Context) {
	kube := l.c.cp.Kube
	pods, err := kube.CoreV1().Pods(podGroupNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	running := map[string]int{}
	oldest := map[string]time.Time{}
	for _, p := range pods.Items {
		g := p.Labels[gangLabel]
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running[g]++
		}
		if t, ok := oldest[g]; !ok || p.CreationTimestamp.Before(&metav1.Time{Time: t}) {
			oldest[g] = p.CreationTimestamp.Time
		}
	}
	var victim string
	for g, n := range running {
		if n == gangSize && (victim == "" || oldest[g].Before(oldest[victim])) {
			victim = g
		}
	}
	if victim == "" {
		return
	}
	_ = kube.SchedulingV1beta1().PodGroups(podGroupNamespace).Delete(ctx, victim, metav1.DeleteOptions{})
	_ = kube.CoreV1().Pods(podGroupNamespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
		metav1.ListOptions{LabelSelector: gangLabel + "=" + victim})
}

// memberName names the ith member of the gang.
func memberName(gang string, i int) string {
	return fmt.Sprintf("%s%d-%s", memberPrefix, i, gang)
}

// gangMember is a pod of the PodGroup group asking for one GPU slice of
// kind.memoryMiB and 30% of the GPU's compute.
func gangMember(name, group string, kind gangJobKind) *corev1.Pod {
	names := gpurequest.DefaultResourceNames()
	p := gpuPod(name, schedulerName)
	p.Namespace = podGroupNamespace
	p.Labels = map[string]string{gangLabel: group}
	p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(group)}
	p.Spec.Containers[0].Resources.Limits[names.Memory] = *resource.NewQuantity(kind.memoryMiB, resource.DecimalSI)
	p.Spec.Containers[0].Resources.Limits[names.Cores] = resource.MustParse("30")
	return p
}
