package main

import (
	"context"
	"encoding/json"
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
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// demoNamespace holds the example pods.
const demoNamespace = "tessera-demo"

// demo creates the example pods (and the claim templates they use), waits
// for them to run, and prints where each landed.
func (c *cluster) demo(ctx context.Context) error {
	objs, err := readExamples(c.o.examples)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNamespace}}
	if _, err := c.cp.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// One at a time, so that each pod's placement sees the ones before it
	// and binpack and spread show their effect.
	for _, obj := range objs {
		switch obj := obj.(type) {
		case *resourceapi.ResourceClaimTemplate:
			if _, err := c.cp.Kube.ResourceV1().ResourceClaimTemplates(obj.Namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating ResourceClaimTemplate %s: %w", obj.Name, err)
			}
		case *corev1.Pod:
			created, err := c.cp.Kube.CoreV1().Pods(obj.Namespace).Create(ctx, obj, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("creating pod %s: %w", obj.Name, err)
			}
			c.waitSettled(ctx, created)
		}
	}
	if c.o.dra() {
		return c.printClaimPlacements(ctx, os.Stdout)
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

// readExamples reads every manifest in dir, in file order: pods, and the
// ResourceClaimTemplates of DRA examples.
func readExamples(dir string) ([]runtime.Object, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var objs []runtime.Object
	for _, file := range files {
		read, err := readManifests(file)
		if err != nil {
			return nil, err
		}
		objs = append(objs, read...)
	}
	return objs, nil
}

func readManifests(file string) ([]runtime.Object, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	decoder := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var objs []runtime.Object
	for {
		var raw runtime.RawExtension
		err := decoder.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", file, err)
		}
		var meta metav1.TypeMeta
		if err := json.Unmarshal(raw.Raw, &meta); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", file, err)
		}
		var obj runtime.Object
		switch meta.Kind {
		case "Pod":
			obj = &corev1.Pod{}
		case "ResourceClaimTemplate":
			obj = &resourceapi.ResourceClaimTemplate{}
		default:
			return nil, fmt.Errorf("%s: only pods and ResourceClaimTemplates are applied, found kind %q", file, meta.Kind)
		}
		if err := json.Unmarshal(raw.Raw, obj); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", file, err)
		}
		objs = append(objs, obj)
	}
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
			printWithoutGPU(ctx, w, c, &pod)
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
			if r.Response != nil {
				out[r.Container] = limitsEnv(r.Response.Envs)
			}
		}
	}
	return out
}

// limitsEnv shows the GPUs and limits among a container's variables.
func limitsEnv(env map[string]string) string {
	var kv []string
	for k, v := range env {
		if k == "NVIDIA_VISIBLE_DEVICES" || strings.HasPrefix(k, "CUDA_DEVICE_") {
			kv = append(kv, k+"="+v)
		}
	}
	slices.Sort(kv)
	return strings.Join(kv, " ")
}

// printWithoutGPU prints the line of a pod that holds no GPU: where it
// runs when it asks for none, or why it waits.
func printWithoutGPU(ctx context.Context, w io.Writer, c *cluster, pod *corev1.Pod) {
	node, note := "-", pendingReason(ctx, c, pod)
	if pod.Spec.NodeName != "" {
		node, note = pod.Spec.NodeName, "asks for no GPU; placed by "+pod.Spec.SchedulerName
	}
	fmt.Fprintf(w, "%s\t%s\t%s\t-\t-\t-\t-\t-\t%s\n", pod.Name, pod.Status.Phase, node, note)
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
