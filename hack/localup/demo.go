package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// demoNamespace holds the example pods.
const demoNamespace = "tessera-demo"

// demo creates the example pods, waits for them to run, and prints where
// each landed.
func (c *cluster) demo(ctx context.Context) error {
	pods, err := readPods(c.o.examples)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNamespace}}
	if _, err := c.cp.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// One at a time, so that each pod's placement sees the ones before it
	// and binpack and spread show their effect.
	for _, pod := range pods {
		created, err := c.cp.Kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
		c.waitSettled(ctx, created)
	}
	return c.printPlacements(ctx, os.Stdout)
}

// waitSettled waits until the pod runs, fails, or is found unschedulable;
// pods that cannot be placed stay Pending, and are shown as they are.
func (c *cluster) waitSettled(ctx context.Context, pod *corev1.Pod) {
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := c.cp.Kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if p.Status.Phase != corev1.PodPending {
			return true, nil
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
				return true, nil
			}
		}
		return false, nil
	})
}

// readPods reads every pod manifest in dir, in file order.
func readPods(dir string) ([]*corev1.Pod, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var pods []*corev1.Pod
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		decoder := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			pod := &corev1.Pod{}
			err := decoder.Decode(pod)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				_ = f.Close()
				return nil, fmt.Errorf("decoding %s: %w", file, err)
			}
			if pod.Kind != "Pod" {
				_ = f.Close()
				return nil, fmt.Errorf("%s: only pods are applied, found kind %q", file, pod.Kind)
			}
			pods = append(pods, pod)
		}
		_ = f.Close()
	}
	return pods, nil
}

// printPlacements prints one line per GPU slice of every example pod, with
// what the device plugin told the kubelet to give the container.
func (c *cluster) printPlacements(ctx context.Context, out io.Writer) error {
	list, err := c.cp.Kube.CoreV1().Pods(demoNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	models := map[string]string{}
	for _, n := range simNodes() {
		for _, g := range n.gpus {
			models[g.UUID] = g.Model
		}
	}
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "POD\tPHASE\tNODE\tCONTAINER\tGPU\tMODEL\tMEMORY(MiB)\tCORES(%)\tCONTAINER ENV")
	for _, pod := range list.Items {
		alloc, err := c.cp.Tessera.GpuV1alpha1().GPUAllocations(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			reason := pod.Status.Phase
			fmt.Fprintf(w, "%s\t%s\t-\t-\t-\t-\t-\t-\t%s\n", pod.Name, reason, pendingReason(ctx, c, &pod))
			continue
		}
		env := c.containerEnv(pod.UID)
		for _, ct := range alloc.Spec.Containers {
			for _, d := range ct.Devices {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d (%s)\t%s\t%d\t%d\t%s\n",
					pod.Name, pod.Status.Phase, alloc.Spec.NodeName, ct.Name, d.Index, d.UUID,
					models[d.UUID], d.MemoryMiB, d.Cores, env[ct.Name])
			}
		}
	}
	return w.Flush()
}

// containerEnv returns, per container, the limits the device plugin handed
// the kubelet, as the container would see them.
func (c *cluster) containerEnv(uid types.UID) map[string]string {
	out := map[string]string{}
	for _, a := range c.agents {
		for _, r := range a.Results(uid) {
			var kv []string
			for k, v := range r.Response.Envs {
				if k == "NVIDIA_VISIBLE_DEVICES" || strings.HasPrefix(k, "CUDA_DEVICE_") {
					kv = append(kv, k+"="+v)
				}
			}
			slices.Sort(kv)
			out[r.Container] = strings.Join(kv, " ")
		}
	}
	return out
}

// pendingReason is the newest scheduling event of a pod that got no GPUs.
func pendingReason(ctx context.Context, c *cluster, pod *corev1.Pod) string {
	events, err := c.cp.Kube.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + pod.Name,
	})
	if err != nil || len(events.Items) == 0 {
		return ""
	}
	return events.Items[len(events.Items)-1].Message
}
