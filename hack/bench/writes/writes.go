// Package writes is the bench's writes mode: what each write of a pod's
// scheduling costs the control plane.
package writes

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	gpulisters "github.com/tessera-gpu/tessera/generated/listers/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
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
func Run(ctx context.Context, r *harness.Runner) (*WritesResult, error) {
	o := r.Options
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	env, err := harness.StartEnv(ctx, filepath.Join(r.Base, "writes"), r.ExtenderConfig.SchedulerName)
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
	steps, err := newSteps(env, o, watches)
	if err != nil {
		return nil, err
	}
	defer func() {
		cancel()
		watches.Shutdown()
	}()
	if err := watches.Start(ctx); err != nil {
		return nil, err
	}
	res := &WritesResult{Pods: o.Pods, Workers: o.Workers, Load: meter.LoadAverage()}
	for _, s := range steps.all() {
		cost, err := measure(ctx, env, o, s)
		if err != nil {
			return nil, err
		}
		res.Costs = append(res.Costs, cost)
	}
	return res, nil
}

// step is one kind of write: who makes it, in which rows, how to make
// the i-th, and how many of them the informers have seen.
type step struct {
	write, by, rows string
	do              func(ctx context.Context, i int) error
	seen            func() (int, error)
}

// measure makes a step's writes and waits until the informers have seen
// them all, so that their watch events are paid for too.
func measure(ctx context.Context, env *harness.ClusterEnv, o *harness.Options, s step) (WriteCost, error) {
	before, start := meter.SampleCPU(env.Dir), time.Now()
	if err := harness.ForEach(ctx, o.Pods, o.Workers, s.do); err != nil {
		return WriteCost{}, err
	}
	took := time.Since(start)
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		n, err := s.seen()
		return n == o.Pods, err
	})
	if err != nil {
		return WriteCost{}, fmt.Errorf("waiting for the informers to see every %s: %w", s.write, err)
	}
	used := meter.SampleCPU(env.Dir).Since(before)
	klog.FromContext(ctx).Info("Measured writes", "write", s.write, "count", o.Pods, "took", took.Round(time.Millisecond), "cpu", used)
	return WriteCost{Write: s.write, By: s.by, Rows: s.rows, Count: o.Pods,
		APIServer: used["kube-apiserver"] / time.Duration(o.Pods), Etcd: used["etcd"] / time.Duration(o.Pods),
		PerSecond: float64(o.Pods) / took.Seconds()}, nil
}

// steps holds what the writes of one step leave for the next: the pods,
// where the placer put each, and their allocations.
type steps struct {
	env              *harness.ClusterEnv
	shapes           []harness.Shape
	nodes            []int
	devices          [][]gpuv1alpha1.DeviceAllocation
	pods             []*corev1.Pod
	allocations      []*gpuv1alpha1.GPUAllocation
	podLister        corelisters.PodLister
	allocationLister gpulisters.GPUAllocationLister
}

// newSteps places o.Pods pods of the workload's mix with the placer's
// first fit, for the writes to make.
func newSteps(env *harness.ClusterEnv, o *harness.Options, watches *harness.Informers) (*steps, error) {
	s := &steps{
		env: env, shapes: harness.DefaultMix().Sequence(o.Pods),
		nodes: make([]int, o.Pods), devices: make([][]gpuv1alpha1.DeviceAllocation, o.Pods),
		pods: make([]*corev1.Pod, o.Pods), allocations: make([]*gpuv1alpha1.GPUAllocation, o.Pods),
		podLister:        watches.Kube.Core().V1().Pods().Lister(),
		allocationLister: watches.Tessera.Gpu().V1alpha1().GPUAllocations().Lister(),
	}
	p := harness.NewPlacer(o.Nodes, o.GPUsPerNode, o.Split)
	for i, shape := range s.shapes {
		var err error
		if s.nodes[i], s.devices[i], err = p.Place(i, shape); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// all are the writes in the order scheduling a pod makes them.
func (s *steps) all() []step {
	kube, tessera := s.env.ControlPlane.Kube, s.env.ControlPlane.Tessera
	create := metav1.CreateOptions{FieldManager: harness.FieldManager}
	return []step{{
		write: "pod create", by: "the user", rows: "all, before timing",
		do: func(ctx context.Context, i int) error {
			pod, err := kube.CoreV1().Pods(harness.Namespace).Create(ctx, harness.NewPod(harness.PodName(i), s.env.SchedulerName, s.shapes[i], harness.FormSlices), create)
			s.pods[i] = pod
			return err
		},
		seen: counter(s.podLister.List, func(*corev1.Pod) bool { return true }),
	}, {
		write: "GPUAllocation create", by: "Tessera's extender, before binding", rows: "c",
		do: func(ctx context.Context, i int) error {
			pod := s.pods[i].DeepCopy()
			pod.Spec.NodeName = harness.NodeName(s.nodes[i])
			a, err := tessera.GpuV1alpha1().GPUAllocations(harness.Namespace).Create(ctx, harness.AllocationFor(pod, s.devices[i]), create)
			s.allocations[i] = a
			return err
		},
		seen: counter(s.allocationLister.List, func(*gpuv1alpha1.GPUAllocation) bool { return true }),
	}, {
		write: "binding", by: "kube-scheduler (a), the extender (b, c)", rows: "a, b, c",
		do: func(ctx context.Context, i int) error {
			return kube.CoreV1().Pods(harness.Namespace).Bind(ctx, &corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Name: s.pods[i].Name, UID: s.pods[i].UID},
				Target:     corev1.ObjectReference{Kind: "Node", Name: harness.NodeName(s.nodes[i])},
			}, create)
		},
		seen: counter(s.podLister.List, func(pod *corev1.Pod) bool { return pod.Spec.NodeName != "" }),
	}, {
		write: "GPUAllocation status: Allocated", by: "Tessera's device plugin", rows: "c",
		do: func(ctx context.Context, i int) error {
			a := s.allocations[i].DeepCopy()
			a.Status = harness.AllocatedStatus(a, metav1.Now())
			_, err := tessera.GpuV1alpha1().GPUAllocations(harness.Namespace).UpdateStatus(ctx, a, metav1.UpdateOptions{FieldManager: harness.FieldManager})
			return err
		},
		seen: counter(s.allocationLister.List, func(a *gpuv1alpha1.GPUAllocation) bool { return a.Status.Phase == gpuv1alpha1.AllocationAllocated }),
	}}
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
