package writes

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/tessera-gpu/tessera/hack/bench/harness"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// WriteCost is what one kind of write cost the control plane, per write.
type WriteCost struct {
	// Write is what was written, By who writes it when Tessera schedules
	// a pod, and Rows the throughput rows that make it.
	Write, By, Rows string
	// Count is how many were written.
	Count int
	// APIServer and Etcd are each process's CPU time per write, from the
	// first write until every watcher had seen the last.
	APIServer, Etcd time.Duration
	// PerSecond is writes per second with --workers in flight.
	PerSecond float64
}

// WritesResult is what the writes mode measured.
type WritesResult struct {
	Pods, Workers int
	Load          string
	Costs         []WriteCost
}

// Run measures, one kind after another, the writes that scheduling
// a pod makes: the pod's create (before any row is timed), its binding
// (every row), and the two Tessera adds (row c): the extender's
// GPUAllocation create and the device plugin's status update marking it
// Allocated. The pods and allocations are watched as in row c, by one
// informer each.
func Run(ctx context.Context, o *harness.Options, base, schedulerName string) (*WritesResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	env, err := harness.StartEnv(ctx, filepath.Join(base, "writes"), schedulerName)
	if err != nil {
		return nil, err
	}
	defer env.Stop()
	if err := harness.CreateNodes(ctx, env, o, harness.FormSlices); err != nil {
		return nil, err
	}
	watches, err := harness.NewInformers(env)
	if err != nil {
		return nil, err
	}
	podLister := watches.Kube.Core().V1().Pods().Lister()
	allocationLister := watches.Tessera.Gpu().V1alpha1().GPUAllocations().Lister()
	defer func() {
		cancel()
		watches.Shutdown()
	}()
	if err := watches.Start(ctx); err != nil {
		return nil, err
	}

	shapes := harness.DefaultMix().Sequence(o.Pods)
	p := harness.NewPlacer(o.Nodes, o.GPUsPerNode, o.Split)
	nodes := make([]int, o.Pods)
	devices := make([][]gpuv1alpha1.DeviceAllocation, o.Pods)
	for i, s := range shapes {
		if nodes[i], devices[i], err = p.Place(i, s); err != nil {
			return nil, err
		}
	}
	pods := make([]*corev1.Pod, o.Pods)
	allocations := make([]*gpuv1alpha1.GPUAllocation, o.Pods)
	res := &WritesResult{Pods: o.Pods, Workers: o.Workers, Load: harness.LoadAverage()}

	// measure makes the writes and waits until the informers have seen
	// them all, so that their watch events are paid for too.
	measure := func(write, by, rows string, fn func(ctx context.Context, i int) error, seen func() (int, error)) error {
		before, start := harness.SampleCPU(env.Dir), time.Now()
		if err := harness.ForEach(ctx, o.Pods, o.Workers, fn); err != nil {
			return err
		}
		took := time.Since(start)
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			n, err := seen()
			return n == o.Pods, err
		})
		if err != nil {
			return fmt.Errorf("waiting for the informers to see every %s: %w", write, err)
		}
		used := harness.SampleCPU(env.Dir).Since(before)
		cost := WriteCost{Write: write, By: by, Rows: rows, Count: o.Pods,
			APIServer: used["kube-apiserver"] / time.Duration(o.Pods), Etcd: used["etcd"] / time.Duration(o.Pods),
			PerSecond: float64(o.Pods) / took.Seconds()}
		klog.FromContext(ctx).Info("Measured writes", "write", write, "count", o.Pods, "took", took.Round(time.Millisecond), "cpu", used)
		res.Costs = append(res.Costs, cost)
		return nil
	}
	err = measure("pod create", "the user", "all, before timing", func(ctx context.Context, i int) error {
		pod, err := env.ControlPlane.Kube.CoreV1().Pods(harness.Namespace).Create(ctx, harness.NewPod(harness.PodName(i), schedulerName, shapes[i], harness.FormSlices),
			metav1.CreateOptions{FieldManager: harness.FieldManager})
		pods[i] = pod
		return err
	}, counter(podLister.List, func(*corev1.Pod) bool { return true }))
	if err != nil {
		return nil, err
	}
	err = measure("GPUAllocation create", "Tessera's extender, before binding", "c", func(ctx context.Context, i int) error {
		pod := pods[i].DeepCopy()
		pod.Spec.NodeName = harness.NodeName(nodes[i])
		a, err := env.ControlPlane.Tessera.GpuV1alpha1().GPUAllocations(harness.Namespace).Create(ctx, harness.AllocationFor(pod, devices[i]),
			metav1.CreateOptions{FieldManager: harness.FieldManager})
		allocations[i] = a
		return err
	}, counter(allocationLister.List, func(*gpuv1alpha1.GPUAllocation) bool { return true }))
	if err != nil {
		return nil, err
	}
	err = measure("binding", "kube-scheduler (a), the extender (b, c)", "a, b, c", func(ctx context.Context, i int) error {
		return env.ControlPlane.Kube.CoreV1().Pods(harness.Namespace).Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pods[i].Name, UID: pods[i].UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: harness.NodeName(nodes[i])},
		}, metav1.CreateOptions{FieldManager: harness.FieldManager})
	}, counter(podLister.List, func(pod *corev1.Pod) bool { return pod.Spec.NodeName != "" }))
	if err != nil {
		return nil, err
	}
	err = measure("GPUAllocation status: Allocated", "Tessera's device plugin", "c", func(ctx context.Context, i int) error {
		a := allocations[i].DeepCopy()
		a.Status = harness.AllocatedStatus(a, metav1.Now())
		_, err := env.ControlPlane.Tessera.GpuV1alpha1().GPUAllocations(harness.Namespace).UpdateStatus(ctx, a, metav1.UpdateOptions{FieldManager: harness.FieldManager})
		return err
	}, counter(allocationLister.List, func(a *gpuv1alpha1.GPUAllocation) bool { return a.Status.Phase == gpuv1alpha1.AllocationAllocated }))
	if err != nil {
		return nil, err
	}
	return res, nil
}

// counter returns how many objects a lister holds that keep accepts.
func counter[T any](list func(labels.Selector) ([]T, error), keep func(T) bool) func() (int, error) {
	return func() (int, error) {
		objects, err := list(labels.Everything())
		n := 0
		for _, o := range objects {
			if keep(o) {
				n++
			}
		}
		return n, err
	}
}

func (r *WritesResult) title() string {
	return fmt.Sprintf("Control-plane CPU per write: %d of each, %d at once, watched by one pod and one GPUAllocation informer (load average %s before)",
		r.Pods, r.Workers, r.Load)
}

func (r *WritesResult) rows() [][]string {
	rows := make([][]string, 0, len(r.Costs))
	for _, c := range r.Costs {
		count := uint64(c.Count)
		rows = append(rows, []string{c.Write, c.By, c.Rows,
			harness.FormatDuration(c.APIServer, count), harness.FormatDuration(c.Etcd, count), fmt.Sprintf("%.0f", c.PerSecond)})
	}
	return rows
}

var writesHeader = []string{"write", "made by", "rows", "kube-apiserver CPU", "etcd CPU", "writes/s"}

// WriteText writes the writes table with aligned columns.
func (r *WritesResult) WriteText(w io.Writer) error {
	return harness.WriteGrid(w, r.title(), writesHeader, r.rows(), nil, false)
}

// WriteMarkdown writes the writes table in Markdown.
func (r *WritesResult) WriteMarkdown(w io.Writer) error {
	return harness.WriteGrid(w, r.title(), writesHeader, r.rows(), nil, true)
}
