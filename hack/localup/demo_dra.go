package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// printClaimPlacements prints, in DRA mode, one line per GPU share of every
// example pod's claims: where kube-scheduler allocated it, what it
// consumes, and the limits the container gets from its CDI devices as the
// node's container runtime would resolve them.
func (c *cluster) printClaimPlacements(ctx context.Context, out io.Writer) error {
	pods, err := c.cp.Kube.CoreV1().Pods(demoNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	slices, err := c.cp.Kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	devices := map[string]resourceapi.Device{} // pool/device
	for _, s := range slices.Items {
		for _, d := range s.Spec.Devices {
			devices[s.Spec.Pool.Name+"/"+d.Name] = d
		}
	}
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "POD\tPHASE\tNODE\tCONTAINER\tGPU\tMODEL\tMEMORY(MiB)\tCORES(%)\tCONTAINER ENV")
	for _, pod := range pods.Items {
		claims := c.podClaims(ctx, &pod)
		if len(claims) == 0 {
			printWithoutGPU(ctx, w, c, &pod)
			continue
		}
		env := c.cdiEnv(&pod)
		for podClaim, claim := range claims {
			for _, r := range claim.Status.Allocation.Devices.Results {
				if r.Driver != gpuv1alpha1.DRADriverName {
					continue
				}
				d := devices[r.Pool+"/"+r.Device]
				memory := r.ConsumedCapacity[gpuv1alpha1.DRACapacityMemory]
				cores := r.ConsumedCapacity[gpuv1alpha1.DRACapacityCores]
				for _, ct := range usingContainers(&pod, podClaim, r.Request) {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d (%s)\t%s\t%d\t%d\t%s\n",
						pod.Name, pod.Status.Phase, pod.Spec.NodeName, ct, *d.Attributes[gpuv1alpha1.DRAAttributeIndex].IntValue,
						*d.Attributes[gpuv1alpha1.DRAAttributeUUID].StringValue, *d.Attributes[gpuv1alpha1.DRAAttributeModel].StringValue,
						memory.Value()>>20, cores.Value(), env[ct])
				}
			}
		}
	}
	return w.Flush()
}

// podClaims returns the pod's allocated claims by the pod's name for them.
func (c *cluster) podClaims(ctx context.Context, pod *corev1.Pod) map[string]*resourceapi.ResourceClaim {
	out := map[string]*resourceapi.ResourceClaim{}
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.ResourceClaimName == nil {
			continue
		}
		claim, err := c.cp.Kube.ResourceV1().ResourceClaims(pod.Namespace).Get(ctx, *s.ResourceClaimName, metav1.GetOptions{})
		if err == nil && claim.Status.Allocation != nil {
			out[s.Name] = claim
		}
	}
	return out
}

// usingContainers are the containers of the pod that use the request of
// the pod's claim.
func usingContainers(pod *corev1.Pod, podClaim, request string) []string {
	var out []string
	for _, ct := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		for _, rc := range ct.Resources.Claims {
			if rc.Name == podClaim && (rc.Request == "" || rc.Request == request) {
				out = append(out, ct.Name)
				break
			}
		}
	}
	return out
}

// cdiEnv returns, per container, the limits among the variables of the CDI
// devices the node agent got for it, resolved through the node's CDI spec
// directory as a container runtime does.
func (c *cluster) cdiEnv(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	if pod.Spec.NodeName == "" {
		return out
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(c.cdiDir(pod.Spec.NodeName)), cdi.WithAutoRefresh(false))
	if err != nil {
		return out
	}
	for _, a := range c.agents {
		for _, r := range a.Results(pod.UID) {
			env := map[string]string{}
			for _, id := range r.CDIDevices {
				dev := cache.GetDevice(id)
				if dev == nil {
					continue
				}
				for _, kv := range dev.ContainerEdits.Env {
					k, v, _ := strings.Cut(kv, "=")
					env[k] = v
				}
			}
			out[r.Container] = limitsEnv(env)
		}
	}
	return out
}
